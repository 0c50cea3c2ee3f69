#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
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


OUT = "/app/errors_per_hour.csv"
# computed from the original log
EXPECTED = ['hour,errors',
            '2024-03-05 08:00,4',
            '2024-03-05 10:00,3',
            '2024-03-05 11:00,15',
            '2024-03-05 12:00,3',
            '2024-03-05 14:00,1',
            '2024-03-05 15:00,12',
            '2024-03-05 16:00,1',
            '2024-03-05 17:00,1']


def lines():
    with open(OUT) as fh:
        return [ln.rstrip("\r") for ln in fh.read().splitlines() if ln.strip()]


@check
def header_exact():
    assert lines()[0] == "hour,errors", lines()[0]


@check
def hours_present():
    got = [ln.split(",")[0] for ln in lines()[1:]]
    assert sorted(got) == sorted(e.split(",")[0] for e in EXPECTED[1:]), got


@check
def counts_correct():
    assert sorted(lines()[1:]) == sorted(EXPECTED[1:]), lines()[1:]


@check
def chronological_order():
    assert lines() == EXPECTED, lines()


if __name__ == "__main__":
    main()
