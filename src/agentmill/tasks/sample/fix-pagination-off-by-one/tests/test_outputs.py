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


sys.dont_write_bytecode = True
sys.path.insert(0, "/app/webapp")
from pagination import paginate  # noqa: E402

RECORDS = [f"r{i}" for i in range(1, 24)]  # 23 records


@check
def first_page_holds_first_items():
    p = paginate(RECORDS, 1)
    assert p["items"] == RECORDS[:10], p["items"]
    assert p["has_prev"] is False and p["has_next"] is True


@check
def partial_last_page_reachable():
    p = paginate(RECORDS, 3)
    assert p["items"] == ["r21", "r22", "r23"], p["items"]
    assert p["total_pages"] == 3 and p["has_next"] is False and p["has_prev"] is True


@check
def exact_multiple_has_no_extra_page():
    data = list(range(20))
    assert paginate(data, 1, 5)["total_pages"] == 4
    last = paginate(data, 4, 5)
    assert last["items"] == [15, 16, 17, 18, 19] and last["has_next"] is False


@check
def beyond_end_and_empty():
    p = paginate(RECORDS, 7)
    assert p["items"] == [] and p["has_next"] is False and p["total_pages"] == 3
    e = paginate([], 1)
    assert e["items"] == [] and e["total_pages"] == 0 and e["has_next"] is False and e["total_items"] == 0


@check
def page_size_one_and_tuple_input():
    p = paginate(("a", "b", "c"), 2, per_page=1)
    assert p["items"] == ["b"] and p["total_pages"] == 3 and p["has_next"] and p["has_prev"]


@check
def result_keys_unchanged():
    keys = set(paginate(RECORDS, 2, 7))
    assert keys == {"items", "page", "per_page", "total_items", "total_pages", "has_prev", "has_next"}, keys
    p = paginate(RECORDS, 2, 7)
    assert p["page"] == 2 and p["per_page"] == 7 and p["total_items"] == 23 and p["items"] == RECORDS[7:14]


@check
def invalid_arguments_rejected():
    for args in ((RECORDS, 0), (RECORDS, 1, 0), (RECORDS, -2, 5)):
        try:
            paginate(*args)
        except ValueError:
            continue
        raise AssertionError(f"no ValueError for {args[1:]}")


if __name__ == "__main__":
    main()
