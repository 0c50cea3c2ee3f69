#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import json
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


OUT = "/app/event_counts.json"
EXPECTED = {'counts': {'click': 154,
                       'logout': 54,
                       'page_view': 222,
                       'purchase': 28,
                       'search': 105,
                       'signup': 21},
            'skipped': 16}


def load():
    with open(OUT) as fh:
        return json.load(fh)


@check
def is_object_with_expected_keys():
    data = load()
    assert isinstance(data, dict) and set(data) == {"counts", "skipped"}, f"keys {list(data)}"


@check
def counts_per_type_correct():
    counts = load()["counts"]
    assert counts == EXPECTED["counts"], f"counts {counts}"
    assert all(type(v) is int for v in counts.values()), "counts must be JSON numbers"


@check
def skipped_count_correct():
    skipped = load()["skipped"]
    assert type(skipped) is int and skipped == EXPECTED["skipped"], f"skipped {skipped!r}"


if __name__ == "__main__":
    main()
