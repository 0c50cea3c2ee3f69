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
sys.path.insert(0, "/app/shop")
from cart import Cart  # noqa: E402


@check
def new_carts_start_empty_and_independent():
    a = Cart("a")
    a.add("X", 500, 2)
    a.apply_discount("TEN", 10)
    b = Cart("b")
    assert b.items == [] and b.discounts == {}, f"b starts with {b.items} {b.discounts}"
    b.add("Y", 100)
    assert a.items == [("X", 500, 2)], f"a.items became {a.items}"
    assert b.items == [("Y", 100, 1)]
    assert Cart("c").items == []


@check
def totals_per_cart():
    a = Cart("a")
    a.add("MUG-01", 1250, 2)
    a.apply_discount("WELCOME10", 10)
    b = Cart("b")
    b.add("PEN-07", 199)
    assert a.total_cents() == 2250
    assert b.total_cents() == 199


@check
def explicit_arguments_still_used():
    items = [("Z", 300, 1)]
    c = Cart("c", items=items, discounts={"HALF": 50})
    c.add("Q", 100, 1)
    assert c.items is items and len(items) == 2
    assert c.total_cents() == 200
    d = Cart("d", [("W", 1000, 1)])
    assert d.subtotal_cents() == 1000


@check
def qty_validation_kept():
    try:
        Cart("e").add("A", 100, 0)
    except ValueError:
        return
    raise AssertionError("qty=0 accepted")


@check
def many_carts_never_leak():
    carts = [Cart(str(i)) for i in range(5)]
    for i, c in enumerate(carts):
        c.add(f"S{i}", 10 * (i + 1), i + 1)
        c.apply_discount(f"D{i}", i)
    for i, c in enumerate(carts):
        assert c.items == [(f"S{i}", 10 * (i + 1), i + 1)], c.items
        assert c.discounts == {f"D{i}": i}, c.discounts


if __name__ == "__main__":
    main()
