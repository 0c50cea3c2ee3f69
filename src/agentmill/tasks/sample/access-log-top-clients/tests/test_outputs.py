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


OUT = "/app/top_clients.txt"
# computed from the generated access log
EXPECTED = ['264 198.51.100.7', '208 192.0.2.15', '182 203.0.113.42', '136 198.51.100.23', '128 203.0.113.9']


def lines():
    with open(OUT) as fh:
        return [ln.rstrip("\r") for ln in fh.read().splitlines() if ln.strip()]


@check
def five_lines():
    assert len(lines()) == 5, lines()


@check
def health_checks_excluded():
    assert not any("10.0.0.5" in ln for ln in lines()), "health-check client counted"


@check
def clients_and_counts_correct():
    assert sorted(lines()) == sorted(EXPECTED), lines()


@check
def ordered_by_count_then_ip():
    assert lines() == EXPECTED, lines()


if __name__ == "__main__":
    main()
