#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
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


DB = "/app/sensors.db"
ROWS = 36
EMPTY = 3
# (sensor, day, max_celsius) computed from readings.csv
DAILY_MAX = [('cellar', '2024-07-01', 16.2),
             ('cellar', '2024-07-02', 16.5),
             ('cellar', '2024-07-03', 16.3),
             ('greenhouse', '2024-07-01', 29.6),
             ('greenhouse', '2024-07-02', 27.9),
             ('greenhouse', '2024-07-03', 28.4),
             ('shed', '2024-07-01', 22.7),
             ('shed', '2024-07-02', 19.7),
             ('shed', '2024-07-03', 23.8)]


def query(sql):
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@check
def table_has_expected_columns():
    cols = [(r[1], r[2].upper()) for r in query("PRAGMA table_info('readings')")]
    assert cols == [("sensor", "TEXT"), ("taken_at", "TEXT"), ("celsius", "REAL")], cols


@check
def all_rows_imported_without_header():
    assert query("SELECT count(*) FROM readings") == [(ROWS,)]
    assert query("SELECT count(*) FROM readings WHERE sensor = 'sensor'") == [(0,)], "header imported as a row"


@check
def celsius_types():
    types = dict(query("SELECT typeof(celsius), count(*) FROM readings GROUP BY 1"))
    assert types == {"real": ROWS - EMPTY, "null": EMPTY}, types


@check
def sample_values():
    assert query("SELECT count(DISTINCT sensor), min(taken_at), max(taken_at) FROM readings") == [
        (3, "2024-07-01T00:00:00", "2024-07-03T18:00:00")]


@check
def daily_max_view():
    assert query("SELECT type FROM sqlite_master WHERE name = 'daily_max'") == [("view",)], "daily_max is not a view"
    rows = query("SELECT sensor, day, max_celsius FROM daily_max ORDER BY sensor, day")
    assert len(rows) == len(DAILY_MAX), rows
    for got, want in zip(rows, DAILY_MAX):
        assert got[:2] == want[:2] and abs(got[2] - want[2]) < 1e-9, (got, want)


if __name__ == "__main__":
    main()
