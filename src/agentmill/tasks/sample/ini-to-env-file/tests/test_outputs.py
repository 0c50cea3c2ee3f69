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


OUT = "/app/config/app.env"
EXPECTED = [
    "SERVER_HOST=0.0.0.0",
    "SERVER_PORT=8443",
    "SERVER_WORKER_COUNT=4",
    "DATABASE_HOST=db.internal",
    "DATABASE_PORT=5432",
    "DATABASE_NAME=billing_prod",
    "DATABASE_POOL_MAX_SIZE=20",
    "FEATURE_FLAGS_NEW_INVOICE_LAYOUT=true",
    "FEATURE_FLAGS_LEGACY_EXPORT=false",
    "EMAIL_FROM_ADDRESS=billing@example.org",
    "EMAIL_SUBJECT_PREFIX=[Billing]",
]


def lines():
    with open(OUT) as fh:
        return [ln.rstrip("\r") for ln in fh.read().splitlines() if ln.strip() != ""]


@check
def all_variables_present():
    names = {ln.split("=", 1)[0] for ln in lines()}
    missing = [e.split("=", 1)[0] for e in EXPECTED if e.split("=", 1)[0] not in names]
    assert not missing, f"missing {missing}"


@check
def values_trimmed_and_exact():
    got = dict(ln.split("=", 1) for ln in lines() if "=" in ln)
    for e in EXPECTED:
        k, v = e.split("=", 1)
        assert got.get(k) == v, f"{k}={got.get(k)!r}, expected {v!r}"


@check
def no_extra_lines_and_order_kept():
    assert lines() == EXPECTED, f"got {lines()}"


if __name__ == "__main__":
    main()
