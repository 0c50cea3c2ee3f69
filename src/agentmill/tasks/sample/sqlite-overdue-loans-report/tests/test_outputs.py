#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import csv
import hashlib
import sqlite3
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


OUT = "/app/overdue.csv"
EXPECTED = [
    "member,title,days_overdue",
    "Tomasz Wolski,Night Trains,68",
    "Tomasz Wolski,A Field Guide to Moss,25",
    "Pedro Alves,Winter Recipes,8",
    "Iris Novak,Rivers of Salt,6",
    "Yuki Tanaka,Copper and Glass,6",
]


def lines():
    with open(OUT, newline="") as fh:
        return [",".join(c.strip() for c in row) for row in csv.reader(fh) if row]


@check
def header_exact():
    assert lines()[0] == EXPECTED[0], lines()[0]


@check
def overdue_set_correct():
    assert sorted(lines()[1:]) == sorted(EXPECTED[1:]), lines()[1:]


@check
def order_correct():
    assert lines() == EXPECTED, lines()


@check
def database_not_modified():
    con = sqlite3.connect("file:/app/library.db?mode=ro", uri=True)
    rows = con.execute("SELECT id, book_id, member_id, due_on, returned_on FROM loans ORDER BY id").fetchall()
    con.close()
    digest = hashlib.sha256(repr(rows).encode()).hexdigest()
    assert len(rows) == 9 and digest == EXPECTED_LOANS_DIGEST, "loans table changed"


EXPECTED_LOANS_DIGEST = "678fceb2a0c9a336c0c3d673344ba15c34edda9692647f927dbd14750671123e"


if __name__ == "__main__":
    main()
