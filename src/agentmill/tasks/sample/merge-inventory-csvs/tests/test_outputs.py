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


OUT = "/app/inventory_total.csv"
EXPECTED = [
    "sku,total_qty",
    "BK-100,15",
    "BK-101,5",
    "CH-042,0",
    "LP-300,7",
    "MG-220,37",
    "NB-010,60",
    "PN-005,215",
    "TS-880,9",
]


def raw():
    with open(OUT, "rb") as fh:
        return fh.read().decode()


@check
def unix_line_endings():
    assert "\r" not in raw(), "file contains CR characters"


@check
def header_is_exact():
    assert raw().splitlines()[0] == "sku,total_qty"


@check
def old_export_ignored():
    got = dict(ln.split(",", 1) for ln in raw().splitlines()[1:] if ln.strip())
    assert got.get("BK-100") != "1014" and got.get("NB-010") != "1059", "store-munich.csv.old was counted"


@check
def totals_and_order_exact():
    got = [ln for ln in raw().splitlines() if ln.strip()]
    assert got == EXPECTED, f"got {got}"


if __name__ == "__main__":
    main()
