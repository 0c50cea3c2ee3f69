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


sys.dont_write_bytecode = True
sys.path.insert(0, "/app/statkit")
import stats  # noqa: E402


@check
def even_length_uses_mean_of_middle_pair():
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.median([10, 20]) == 15
    assert stats.median([7, 7, 8, 100, -3, 0]) == 7
    assert abs(stats.median([0.1, 0.2, 0.4, 0.3]) - 0.25) < 1e-12


@check
def odd_length_still_middle_value():
    assert stats.median([5]) == 5
    assert stats.median([9, 1, 5]) == 5
    assert stats.median([3, -2, 8, 8, 1]) == 3


@check
def input_not_modified():
    data = [9, 2, 7, 4]
    stats.median(data)
    assert data == [9, 2, 7, 4], f"list was changed to {data}"


@check
def accepts_tuples():
    assert stats.median((3, 1, 2)) == 2
    assert stats.median((8, 2, 6, 4)) == 5


@check
def empty_input_raises():
    try:
        stats.median([])
    except ValueError:
        return
    raise AssertionError("median([]) did not raise ValueError")


@check
def other_functions_intact():
    assert stats.mean([1, 2, 3, 4]) == 2.5
    assert stats.value_range([4, -1, 9]) == 10


@check
def report_script_output():
    out = subprocess.run(["python3", "/app/statkit/report.py", "4", "1", "3", "2"],
                         capture_output=True, text=True, cwd="/app/statkit", timeout=20).stdout
    assert "median=2.50" in out and "input order: 4 1 3 2" in out, out


if __name__ == "__main__":
    main()
