#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
import re
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


DIR = "/app/book"
# original name -> contents
ORIGINAL = {'appendix.md': '# Appendix\n\nMaps and tide tables.\n',
            'ch1.md': '# Chapter 1: The Harbour at Dawn\n\nDraft text for chapter 1.\n',
            'ch10.md': '# Chapter 10: Crossing\n\nDraft text for chapter 10.\n',
            'ch11.md': '# Chapter 11: Storm Season\n\nDraft text for chapter 11.\n',
            'ch12.md': '# Chapter 12: Home Port\n\nDraft text for chapter 12.\n',
            'ch2.md': '# Chapter 2: Lanterns\n\nDraft text for chapter 2.\n',
            'ch3-draft.md': '# Chapter 3 (alternate draft)\n\nUnused version.\n',
            'ch3.md': '# Chapter 3: A Letter Arrives\n\nDraft text for chapter 3.\n',
            'ch4.md': '# Chapter 4: The Ferryman\n\nDraft text for chapter 4.\n',
            'ch5.md': '# Chapter 5: Salt and Rope\n\nDraft text for chapter 5.\n',
            'ch6.md': '# Chapter 6: Fog Bank\n\nDraft text for chapter 6.\n',
            'ch7.md': '# Chapter 7: What the Gulls Knew\n\nDraft text for chapter 7.\n',
            'ch8.md': '# Chapter 8: Low Tide\n\nDraft text for chapter 8.\n',
            'ch9.md': '# Chapter 9: The Lighthouse Keeper\n\nDraft text for chapter 9.\n',
            'notes.txt': 'Book outline lives in the chapter files.\n'}
PATTERN = re.compile(r"^ch([0-9]+)\.md$")


def target(name):
    m = PATTERN.match(name)
    return f"chapter-{int(m.group(1)):02d}.md" if m else name


def read(name):
    with open(os.path.join(DIR, name)) as fh:
        return fh.read()


@check
def chapters_renamed_with_contents():
    for name, content in ORIGINAL.items():
        if PATTERN.match(name):
            new = target(name)
            assert os.path.isfile(os.path.join(DIR, new)), f"missing {new}"
            assert read(new) == content, f"{new} does not hold the old {name}"


@check
def old_names_gone():
    left = [n for n in os.listdir(DIR) if PATTERN.match(n)]
    assert not left, f"not renamed: {left}"


@check
def other_files_untouched():
    for name, content in ORIGINAL.items():
        if not PATTERN.match(name):
            assert read(name) == content, f"{name} changed"


@check
def exact_file_set():
    want = sorted(target(n) for n in ORIGINAL)
    have = sorted(os.listdir(DIR))
    assert have == want, f"folder holds {have}"


if __name__ == "__main__":
    main()
