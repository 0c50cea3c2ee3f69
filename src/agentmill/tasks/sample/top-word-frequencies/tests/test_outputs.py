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


OUT = "/app/top_words.txt"
# computed from the original essay
EXPECTED = ['33 the', '9 a', '8 and', '8 garden', '8 i', '7 notebook', '6 in', '6 it', '6 of', '5 tomatoes']


def lines():
    with open(OUT) as fh:
        return [ln.rstrip("\r") for ln in fh.read().splitlines() if ln.strip() != ""]


@check
def has_ten_lines():
    assert len(lines()) == 10, f"got {len(lines())} lines"


@check
def format_is_count_space_word():
    for ln in lines():
        count, sep, word = ln.partition(" ")
        assert sep and count.isdigit() and word.isalpha() and word == word.lower(), f"bad line {ln!r}"


@check
def counts_and_order_correct():
    assert lines() == EXPECTED, f"got {lines()}"


if __name__ == "__main__":
    main()
