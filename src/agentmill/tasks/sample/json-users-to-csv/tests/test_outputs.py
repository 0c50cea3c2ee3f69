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


OUT = "/app/active_users.csv"
EXPECTED = [
    ["2", "Kenji Sato", "k.sato@example.jp", "Tokyo"],
    ["5", "Jonas Weber", "jonas.weber@example.de", "Freiburg im Breisgau"],
    ["8", "Okonkwo, Chidi", "chidi.o@example.org", "Lagos"],
    ["17", "Marta Kowalska", "marta.k@example.net", "Gdansk"],
    ["21", "Sofia Lindqvist", "", "Uppsala"],
    ["30", "Grace O'Neill", "grace@example.ie", "Galway"],
]


def rows():
    with open(OUT, newline="") as fh:
        return [r for r in csv.reader(fh) if r]


@check
def header_is_exact():
    assert rows()[0] == ["id", "name", "email", "city"], f"header {rows()[0]}"


@check
def only_active_users():
    ids = sorted(int(r[0]) for r in rows()[1:])
    assert ids == [2, 5, 8, 17, 21, 30], f"ids {ids}"


@check
def every_row_has_four_fields():
    bad = [r for r in rows() if len(r) != 4]
    assert not bad, f"malformed rows {bad}"


@check
def values_and_order_exact():
    assert rows()[1:] == EXPECTED, f"got {rows()[1:]}"


if __name__ == "__main__":
    main()
