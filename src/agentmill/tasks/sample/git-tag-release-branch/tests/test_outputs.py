#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import subprocess
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


REPO = "/app/repo"
SUBJECTS = [
    "Bump version to 1.3.0-dev",
    "Start work on plural greetings",
    "Bump version to 1.2.0",
    "Add farewell helper",
    "Initial release 1.1.0",
]


def git(*args):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", REPO, *args],
                          capture_output=True, text=True, check=True, timeout=20).stdout.strip()


def release_commit():
    return git("rev-parse", "main~2")


@check
def main_unchanged():
    assert git("log", "--format=%s", "main").splitlines() == SUBJECTS
    assert git("show", "main:VERSION") == "1.3.0-dev"


@check
def tag_is_annotated():
    assert git("cat-file", "-t", "refs/tags/v1.2.0") == "tag", "v1.2.0 is not an annotated tag"


@check
def tag_points_at_release_commit():
    assert git("rev-parse", "refs/tags/v1.2.0^{commit}") == release_commit()
    assert git("show", "v1.2.0:VERSION") == "1.2.0"


@check
def tag_message():
    msg = git("for-each-ref", "refs/tags/v1.2.0", "--format=%(contents)")
    assert msg.strip() == "Release 1.2.0", f"tag message {msg!r}"


@check
def release_branch_points_at_release_commit():
    assert git("rev-parse", "refs/heads/release-1.2") == release_commit()


@check
def old_tag_untouched():
    assert git("rev-parse", "v1.1.0^{commit}") == git("rev-parse", "main~4")


if __name__ == "__main__":
    main()
