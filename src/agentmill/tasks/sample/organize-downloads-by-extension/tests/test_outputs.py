#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
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


ROOT = "/app/downloads"
# original file name -> original contents
FILES = {'IMG_2041.JPG': 'camera raw export 2041\n',
         'Makefile': 'all:\n\techo build\n',
         'README': 'Read me first.\n',
         'Report.PDF': 'Quarterly report placeholder\n',
         'archive.tar.gz': 'compressed archive stand-in\n',
         'data.backup.csv': 'id,value\n1,10\n',
         'holiday.jpg': 'beach picture bytes\n',
         'invoice-2023-11.pdf': 'Invoice #2023-11 for consulting hours\n',
         'meeting notes.docx': 'Agenda: budget, hiring\n',
         'notes.txt': 'buy milk\ncall the plumber\n',
         'photo.jpeg': 'sunset over the lake\n',
         'setup.sh': '#!/bin/sh\necho installing\n',
         'song.mp3': 'fake mp3 audio frames\n',
         'todo.TXT': 'finish the slides\n'}


def expected_dir(name):
    return name.rsplit(".", 1)[1].lower() if "." in name else "misc"


@check
def every_file_moved_with_contents_intact():
    for name, content in FILES.items():
        path = os.path.join(ROOT, expected_dir(name), name)
        assert os.path.isfile(path), f"missing {path}"
        with open(path) as fh:
            assert fh.read() == content, f"contents changed: {path}"


@check
def no_loose_files_left():
    loose = [n for n in os.listdir(ROOT) if not os.path.isdir(os.path.join(ROOT, n))]
    assert not loose, f"files still at top level: {loose}"


@check
def only_expected_subfolders():
    want = {expected_dir(n) for n in FILES}
    have = {n for n in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, n))}
    assert have == want, f"subfolders {sorted(have)} != {sorted(want)}"


@check
def no_extra_or_duplicated_files():
    found = []
    for dirpath, _, names in os.walk(ROOT):
        found += names
    assert sorted(found) == sorted(FILES), f"unexpected file set: {sorted(found)}"


if __name__ == "__main__":
    main()
