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
# tree object of the original feature/csv-export tip (depends only on file contents)
WIP_TREE = "130c6d4be80f9aba4897a0b4ec9648532b7cb5f2"
MAIN_SUBJECTS = ["Add README", "Add export module"]


def git(*args):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", REPO, *args],
                          capture_output=True, text=True, check=True, timeout=20).stdout.strip()


@check
def main_unchanged():
    assert git("log", "--format=%s", "main").splitlines() == MAIN_SUBJECTS
    assert "CSV" not in git("show", "main:README.md")


@check
def single_commit_on_top_of_main():
    assert git("rev-parse", "feature/csv-export~1") == git("rev-parse", "main"), "parent is not main"
    assert git("rev-list", "--count", "main..feature/csv-export") == "1"


@check
def commit_message_exact():
    assert git("log", "-1", "--format=%B", "feature/csv-export").strip() == "Add CSV export"


@check
def content_identical_to_wip_tip():
    assert git("rev-parse", "feature/csv-export^{tree}") == WIP_TREE, "files differ from the WIP branch"


@check
def working_tree_clean():
    assert git("status", "--porcelain") == ""


if __name__ == "__main__":
    main()
