#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import hashlib
import os
import sys

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def main():
    failed = 0
    for fn in CHECKS:
        try:
            fn()
            print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - any error is a failed check
            failed += 1
            print(f"FAIL {fn.__name__}: {e!r}")
    print(f"{len(CHECKS) - failed}/{len(CHECKS)} checks passed")
    sys.exit(1 if failed else 0)


DIR = "/app/photos"
# sha256 of every file in the original folder
ORIGINAL = {'Beach.jpg': 'f90d6697b4c65b96ea69225d2715bdb13fa02494725c588b42aee979d0bed35a',
            'IMG_1001 (1).jpg': 'ed4b264990314687e705fa610479d5f0c67ceb7da8c128b99b1b88e58944c0a9',
            'IMG_1001.jpg': 'ed4b264990314687e705fa610479d5f0c67ceb7da8c128b99b1b88e58944c0a9',
            'IMG_1002-edited.jpg': 'a73f07476c1924fb55f0c5522d0ec89a5cf18ce44df5daad7c3a932485dafafc',
            'IMG_1002.jpg': 'fafa85cb59f2d02f86bf32b29cae6619da14f55e98b1cee2df63d9fc739d06bd',
            'IMG_1003 (2).jpg': '11728d1c393e2b2b3ff5a1303d95b731548148266a5f3cde38e6e7f59d9db474',
            'IMG_1003.jpg': '11728d1c393e2b2b3ff5a1303d95b731548148266a5f3cde38e6e7f59d9db474',
            'Wallpaper-HD.jpg': 'a1886013f5fade7a8ddcb1689d5c50c20bc9f36ce01701e68bb2a67d64c361a1',
            'beach_backup.jpg': 'f90d6697b4c65b96ea69225d2715bdb13fa02494725c588b42aee979d0bed35a',
            'cat.png': '63d96261e9634b97ea9dd3ecfba5023dcfa24e2f9d04b4df2c75ac67c0816e73',
            'cat_v2.png': '1fc343e668c0a7455a7c74b994434f0c37451fd54a0311f34c7104bb9cdba35f',
            'copy of IMG_1003.jpg': '11728d1c393e2b2b3ff5a1303d95b731548148266a5f3cde38e6e7f59d9db474',
            'dog.png': '94060892ffaf14507ceb21b7fc11d7270fe72b6710f348d5f58e5280edb0d4e5',
            'family.jpg': 'c9bbb03a06c420dfd4d7e6de387ae2c8f9c37f1c1d0e3a08ebbaa88b637335df',
            'screenshot-2024-01-09.png': 'bad6720fb2fd931de5a67af6088472569aeacbd3814927aa480440466165deca',
            'screenshot-2024-01-10.png': '137e24c8249503cee21cbb82f9ada25b347ee5257e9c0983fa6303374c3af419',
            'wallpaper.jpg': 'a1886013f5fade7a8ddcb1689d5c50c20bc9f36ce01701e68bb2a67d64c361a1',
            'zz_dog.png': '94060892ffaf14507ceb21b7fc11d7270fe72b6710f348d5f58e5280edb0d4e5'}


def expected():
    keep, removed, seen = {}, [], set()
    for name in sorted(ORIGINAL, key=lambda n: n.encode()):
        digest = ORIGINAL[name]
        if digest in seen:
            removed.append(name)
        else:
            seen.add(digest)
            keep[name] = digest
    return keep, removed


@check
def kept_files_are_the_right_ones():
    keep, _ = expected()
    have = sorted(os.listdir(DIR))
    assert have == sorted(keep), f"photos folder now holds {have}"


@check
def kept_files_unchanged():
    keep, _ = expected()
    for name, digest in keep.items():
        with open(os.path.join(DIR, name), "rb") as fh:
            assert hashlib.sha256(fh.read()).hexdigest() == digest, f"{name} was altered"


@check
def no_duplicates_remain():
    digests = []
    for name in os.listdir(DIR):
        with open(os.path.join(DIR, name), "rb") as fh:
            digests.append(hashlib.sha256(fh.read()).hexdigest())
    assert len(digests) == len(set(digests)), "duplicate contents remain"


@check
def removed_list_is_correct():
    _, removed = expected()
    with open("/app/removed.txt") as fh:
        lines = [ln.rstrip("\r") for ln in fh.read().splitlines() if ln.strip()]
    assert lines == removed, f"removed.txt lists {lines}, expected {removed}"


if __name__ == "__main__":
    main()
