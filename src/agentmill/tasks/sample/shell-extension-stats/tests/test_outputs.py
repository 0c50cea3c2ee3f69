#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
import stat
import subprocess
import sys
import tempfile

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


SCRIPT = "/app/extstats.sh"


def run(d):
    p = subprocess.run([SCRIPT, d], capture_output=True, text=True, timeout=20)
    return p.returncode, [ln for ln in p.stdout.splitlines() if ln.strip()]


def tree(files):
    d = tempfile.mkdtemp()
    for rel, content in files.items():
        path = os.path.join(d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(content)
    return d


@check
def is_executable():
    assert os.stat(SCRIPT).st_mode & stat.S_IXUSR, "extstats.sh is not executable"


@check
def sample_project():
    rc, out = run("/app/project")
    assert rc == 0, rc
    assert out == ["(none) 1 2", "css 1 1", "md 2 8", "py 3 8", "txt 1 0"], out


@check
def hidden_entries_skipped_and_spaces_ok():
    d = tree({
        "a b/c d.sh": "1\n2\n3\n",
        "x.SH": "1\n",
        ".hidden.sh": "1\n1\n",
        ".cache/big.sh": "1\n" * 50,
        "sub/.config/z.sh": "1\n",
        "sub/notes": "a\nb\n",
        "sub/deep/LICENSE": "c\n",
        "pkg.tar.gz": "",
    })
    rc, out = run(d)
    assert rc == 0 and out == ["(none) 2 3", "gz 1 0", "sh 2 4"], out


@check
def bytewise_sort_and_many_files():
    files = {f"f{i}.txt": "l\n" * i for i in range(1, 21)}
    files.update({"B.Zz": "", "a.Z": "q\n", "m.c": "1\n2\n", "n._x": "\n"})
    rc, out = run(tree(files))
    assert rc == 0 and out == ["_x 1 1", "c 1 2", "txt 20 210", "z 1 1", "zz 1 0"], out


@check
def empty_dir_prints_nothing():
    rc, out = run(tempfile.mkdtemp())
    assert rc == 0 and out == [], (rc, out)


if __name__ == "__main__":
    main()
