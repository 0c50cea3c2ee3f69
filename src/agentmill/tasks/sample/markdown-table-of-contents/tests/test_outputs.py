#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import hashlib
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


OUT = "/app/docs/TOC.md"
GUIDE_SHA256 = "9f85b5c01a8d7c8b85907ab0e0e28a7ca101326da564d14ee0d2cc494b2fd21c"
EXPECTED = ['- [Getting Started](#getting-started)',
            '  - [Requirements](#requirements)',
            '  - [Installing on macOS & Linux](#installing-on-macos--linux)',
            '- [Configuration](#configuration)',
            '  - [Station IDs](#station-ids)',
            '  - [Sync Interval (minutes)](#sync-interval-minutes)',
            "- [What's new in v2.0?](#whats-new-in-v20)",
            '- [Troubleshooting](#troubleshooting)',
            '  - ["Permission denied" errors](#permission-denied-errors)',
            '  - [Clock drift](#clock-drift)',
            '- [FAQ](#faq)']


def lines():
    with open(OUT) as fh:
        return [ln.rstrip("\r") for ln in fh.read().splitlines() if ln.strip()]


@check
def headings_in_code_blocks_ignored():
    assert not any("inside a code block" in ln or "download the release" in ln for ln in lines())


@check
def entries_and_anchors_correct():
    got = lines()
    assert got == EXPECTED, "\n".join(["got:"] + got)


@check
def guide_not_modified():
    with open("/app/docs/GUIDE.md", "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == GUIDE_SHA256


if __name__ == "__main__":
    main()
