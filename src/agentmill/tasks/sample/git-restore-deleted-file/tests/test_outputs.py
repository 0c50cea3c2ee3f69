#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
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
OLD_SUBJECTS = [
    "Add README",
    "Remove unused files",
    "Make backup script create a tarball",
    "Import legacy sync script",
    "Tune backup defaults",
    "Add backup job skeleton",
]
RESTORED = ('retention_days: 30\n'
            'compression: zstd\n'
            'notify: backups@example.com\n'
            'exclude:\n'
            '  - "*.tmp"\n'
            '  - cache/\n')


def git(*args):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", REPO, *args],
                          capture_output=True, text=True, check=True, timeout=20).stdout


@check
def new_commit_on_top_of_old_history():
    subjects = git("log", "--format=%s", "main").splitlines()
    assert subjects == ["Restore config/defaults.yaml"] + OLD_SUBJECTS, f"history: {subjects}"


@check
def file_restored_to_last_version():
    assert git("show", "main:config/defaults.yaml") == RESTORED


@check
def commit_touches_only_that_file():
    changed = git("diff", "--name-status", "main~1", "main").split("\n")
    assert [c for c in changed if c] == ["A\tconfig/defaults.yaml"], changed


@check
def legacy_script_still_deleted():
    files = git("ls-tree", "-r", "--name-only", "main").split()
    assert "scripts/legacy_sync.sh" not in files
    assert not os.path.exists(f"{REPO}/scripts/legacy_sync.sh")


@check
def working_tree_clean():
    assert git("status", "--porcelain") == ""
    with open(f"{REPO}/config/defaults.yaml") as fh:
        assert fh.read() == RESTORED


if __name__ == "__main__":
    main()
