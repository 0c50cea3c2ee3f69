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


OUT = "/app/blocklist.txt"
EXPECTED = ['9.14.200.3', '45.83.12.9', '77.88.55.60', '103.77.5.200', '185.220.101.4']


def lines():
    with open(OUT) as fh:
        return [ln.strip() for ln in fh.read().splitlines() if ln.strip()]


@check
def attackers_blocked():
    missing = [ip for ip in EXPECTED if ip not in lines()]
    assert not missing, f"not blocked: {missing}"


@check
def no_false_positives():
    extra = [ip for ip in lines() if ip not in EXPECTED]
    assert not extra, f"wrongly blocked: {extra}"


@check
def numeric_sort_order():
    assert lines() == EXPECTED, lines()


if __name__ == "__main__":
    main()
