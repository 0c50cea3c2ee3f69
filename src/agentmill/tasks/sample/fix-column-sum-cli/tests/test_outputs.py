#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
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


CLI = "/app/tools/colsum.py"


def run(content, column):
    fd, path = tempfile.mkstemp(suffix=".csv")
    with os.fdopen(fd, "w") as fh:
        fh.write(content)
    try:
        p = subprocess.run(["python3", CLI, path, column], capture_output=True, text=True, timeout=20,
                           env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    finally:
        os.unlink(path)
    return p.returncode, p.stdout.strip(), p.stderr


SAMPLE = "id,qty,price\n1,3,2.50\n2,,4.00\n3,7,\n4,1,10.25\n"


@check
def sample_file_last_column():
    p = subprocess.run(["python3", CLI, "/app/data/expenses.csv", "amount"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0 and p.stdout.strip() == "91.89", (p.returncode, p.stdout, p.stderr)


@check
def last_column_with_empty_cells():
    rc, out, _ = run(SAMPLE, "price")
    assert (rc, out) == (0, "16.75"), (rc, out)


@check
def middle_column_with_empty_cells():
    rc, out, _ = run(SAMPLE, "qty")
    assert (rc, out) == (0, "11.00"), (rc, out)


@check
def first_column():
    rc, out, _ = run(SAMPLE, "id")
    assert (rc, out) == (0, "10.00"), (rc, out)


@check
def other_file_and_negative_values():
    rc, out, _ = run("region,delta\nnorth,-4.5\nsouth,10\n\neast,0.25\n", "delta")
    assert (rc, out) == (0, "5.75"), (rc, out)


@check
def unknown_column_exits_2():
    rc, out, err = run(SAMPLE, "missing")
    assert rc == 2 and out == "" and "unknown column" in err, (rc, out, err)


if __name__ == "__main__":
    main()
