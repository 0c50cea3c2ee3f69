#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import subprocess
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


REPO = "/app/repo"
ORIGINAL_SUBJECTS = [
    "Initial commit",
    "Add forecast command",
    "Tweak defaults for staging",
    "Document forecast command",
    "Add --days option to forecast",
]
GOOD_CONFIG = '''"""Runtime defaults for the skyline client."""

API_URL = "https://api.skyline.example/v2"
TIMEOUT_SECONDS = 30
UNITS = "metric"
RETRIES = 3
'''
LATEST_FORECAST = '''import config


def forecast_url(city, days=3):
    return f"{config.API_URL}/forecast?city={city}&days={days}&units={config.UNITS}"
'''


def git(*args):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", REPO, *args],
                          capture_output=True, text=True, check=True, timeout=20).stdout


@check
def original_history_kept():
    subjects = git("log", "--reverse", "--first-parent", "--format=%s", "main").splitlines()
    assert subjects[:5] == ORIGINAL_SUBJECTS, f"history now starts {subjects[:5]}"
    assert "staging.skyline" in git("show", "main~1:config.py"), "old commits were rewritten"


@check
def exactly_one_new_commit():
    count = int(git("rev-list", "--count", "main").strip())
    assert count == 6, f"main has {count} commits, expected 6"


@check
def config_restored_at_head():
    assert git("show", "main:config.py") == GOOD_CONFIG


@check
def later_work_preserved():
    assert git("show", "main:forecast.py") == LATEST_FORECAST
    assert "## Usage" in git("show", "main:README.md")


@check
def working_tree_clean_and_on_main():
    assert git("status", "--porcelain") == "", "uncommitted changes"
    assert git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    with open(f"{REPO}/config.py") as fh:
        assert fh.read() == GOOD_CONFIG


if __name__ == "__main__":
    main()
