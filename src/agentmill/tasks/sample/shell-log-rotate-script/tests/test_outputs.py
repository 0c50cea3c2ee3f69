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


SCRIPT = "/app/bin/rotate.sh"


def make(files):
    d = tempfile.mkdtemp()
    for name, content in files.items():
        with open(os.path.join(d, name), "w") as fh:
            fh.write(content)
    return d


def state(d):
    out = {}
    for name in os.listdir(d):
        with open(os.path.join(d, name)) as fh:
            out[name] = fh.read()
    return out


def rotate(d, keep, name="app.log"):
    return subprocess.run([SCRIPT, os.path.join(d, name), str(keep)], capture_output=True, text=True,
                          timeout=20).returncode


@check
def is_executable():
    assert os.stat(SCRIPT).st_mode & stat.S_IXUSR, "rotate.sh is not executable"


@check
def first_rotation():
    d = make({"app.log": "one\n"})
    assert rotate(d, 3) == 0
    assert state(d) == {"app.log": "", "app.log.1": "one\n"}, state(d)


@check
def shifts_existing_copies():
    d = make({"app.log": "cur\n", "app.log.1": "p1\n", "app.log.2": "p2\n"})
    assert rotate(d, 5) == 0
    assert state(d) == {"app.log": "", "app.log.1": "cur\n", "app.log.2": "p1\n", "app.log.3": "p2\n"}, state(d)


@check
def deletes_beyond_keep():
    d = make({"app.log": "cur\n", "app.log.1": "p1\n", "app.log.2": "p2\n", "app.log.3": "p3\n", "app.log.7": "x\n"})
    assert rotate(d, 2) == 0
    assert state(d) == {"app.log": "", "app.log.1": "cur\n", "app.log.2": "p1\n"}, state(d)


@check
def gaps_and_double_digits():
    d = make({"app.log": "cur\n", "app.log.1": "p1\n", "app.log.3": "p3\n", "app.log.9": "p9\n", "app.log.10": "p10\n"})
    assert rotate(d, 10) == 0
    assert state(d) == {"app.log": "", "app.log.1": "cur\n", "app.log.2": "p1\n", "app.log.4": "p3\n",
                        "app.log.10": "p9\n"}, state(d)


@check
def other_files_untouched():
    d = make({"app.log": "cur\n", "app.log.1": "p1\n", "app.log.bak": "bak\n", "other.log.1": "o\n",
              "app.log.1.gz": "gz\n", "app.log.x2": "x\n"})
    assert rotate(d, 4) == 0
    assert state(d) == {"app.log": "", "app.log.1": "cur\n", "app.log.2": "p1\n", "app.log.bak": "bak\n",
                        "other.log.1": "o\n", "app.log.1.gz": "gz\n", "app.log.x2": "x\n"}, state(d)


@check
def keep_one_and_paths_with_spaces():
    d = make({"my app.log": "cur\n", "my app.log.1": "p1\n"})
    assert rotate(d, 1, "my app.log") == 0
    assert state(d) == {"my app.log": "", "my app.log.1": "cur\n"}, state(d)


@check
def errors_change_nothing():
    d = make({"app.log": "cur\n", "app.log.1": "p1\n"})
    before = state(d)
    assert rotate(d, 0) == 1
    assert rotate(d, "two") == 1
    assert rotate(d, 3, "missing.log") == 1
    assert state(d) == before, state(d)


if __name__ == "__main__":
    main()
