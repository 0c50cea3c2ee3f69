#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
import shutil
import sqlite3
import sys
import tempfile

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


DB = "/app/newsletter.db"
EXPECTED = [
    (1, "amelie.roux@example.fr", "Amelie Roux", "2023-09-01"),
    (2, "ben.carter@example.com", "Ben Carter", "2023-09-02"),
    (3, "chen.wei@example.cn", "Chen Wei", "2023-09-02"),
    (5, "dmitri@example.ru", None, "2023-10-12"),
    (7, "elif.yilmaz@example.com.tr", "Elif Yilmaz", "2023-12-01"),
    (8, "farah.aziz@example.pk", "Farah Aziz", "2024-01-05"),
    (10, "gus@example.com", "Gus", "2024-01-07"),
    (12, "hana.sato@example.jp", "Hana Sato", "2024-02-20"),
]


def query(sql):
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@check
def duplicates_removed_keeping_lowest_id():
    ids = [r[0] for r in query("SELECT id FROM subscribers ORDER BY id")]
    assert ids == [r[0] for r in EXPECTED], f"ids {ids}"


@check
def rows_exact_and_lowercase():
    rows = query("SELECT id, email, name, created_at FROM subscribers ORDER BY id")
    assert rows == EXPECTED, rows


@check
def unique_index_exists():
    idx = {r[1]: r for r in query("PRAGMA index_list('subscribers')")}
    assert "idx_subscribers_email" in idx, f"indexes: {list(idx)}"
    assert idx["idx_subscribers_email"][2] == 1, "index is not UNIQUE"
    cols = [r[2] for r in query("PRAGMA index_info('idx_subscribers_email')")]
    assert cols == ["email"], cols


@check
def duplicate_insert_rejected():
    tmp = tempfile.mkdtemp()
    copy = os.path.join(tmp, "copy.db")
    shutil.copy(DB, copy)
    con = sqlite3.connect(copy)
    try:
        con.execute("INSERT INTO subscribers (email, name, created_at) VALUES ('gus@example.com', 'x', '2024-05-01')")
    except sqlite3.IntegrityError:
        return
    finally:
        con.close()
        shutil.rmtree(tmp)
    raise AssertionError("duplicate email was accepted")


@check
def other_table_untouched():
    rows = query("SELECT id, subject, sent_at FROM campaigns ORDER BY id")
    assert rows == [(1, "Spring catalogue", "2024-03-01"), (2, "Summer sale", None)], rows


if __name__ == "__main__":
    main()
