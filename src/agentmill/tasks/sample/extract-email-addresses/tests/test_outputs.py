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


OUT = "/app/emails.txt"
EXPECTED = ['bookings@townhall.example.com',
            'design.team@greenlots.org',
            'l.schmidt@council.gov.uk',
            'permits-2024@council.gov.uk',
            'press-office@council.gov.uk',
            'priya.raman@greenlots.org',
            'sales@seed-and-soil.co.uk',
            'sales@seedandsoil.example',
            'tom_okafor@mailbox.example',
            'volunteers+openday@greenlots.org']


def lines():
    with open(OUT) as fh:
        return [ln.strip() for ln in fh.read().splitlines() if ln.strip()]


@check
def all_addresses_found():
    missing = sorted(set(EXPECTED) - set(lines()))
    assert not missing, f"missing {missing}"


@check
def no_bogus_addresses():
    extra = sorted(set(lines()) - set(EXPECTED))
    assert not extra, f"unexpected entries {extra}"


@check
def lowercase_unique_sorted():
    got = lines()
    assert got == sorted(set(got)), "not sorted / has duplicates"
    assert all(x == x.lower() for x in got), "not all lowercase"
    assert got == EXPECTED


if __name__ == "__main__":
    main()
