#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import csv
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


OUT = "/app/data/region_revenue.csv"
# region totals computed from the original sales.csv
EXPECTED = [['South', '1462.43'],
            ['Central', '1206.06'],
            ['West', '970.59'],
            ['North', '930.65'],
            ['East', '908.17']]


def rows():
    with open(OUT, newline="") as fh:
        return [[c.strip() for c in r] for r in csv.reader(fh) if r]


@check
def header_is_exact():
    assert rows()[0] == ["region", "revenue"], f"header {rows()[0]}"


@check
def one_row_per_region():
    regions = sorted(r[0] for r in rows()[1:])
    assert regions == sorted(r for r, _ in EXPECTED), f"regions {regions}"


@check
def revenue_values_correct():
    got = {r[0]: r[1] for r in rows()[1:]}
    for region, revenue in EXPECTED:
        assert got.get(region) == revenue, f"{region}: {got.get(region)} != {revenue}"


@check
def sorted_by_revenue_desc():
    assert rows()[1:] == EXPECTED, f"order {rows()[1:]}"


if __name__ == "__main__":
    main()
