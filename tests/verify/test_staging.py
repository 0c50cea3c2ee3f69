"""Staging a task's tests and solution for a sandbox (verify/staging.py): contents copied, links kept
as links (never followed onto the host), and modes any sandbox uid can read."""

from __future__ import annotations

import os

from agentmill.verify.staging import stage


def test_folders_are_merged_files_are_copied_by_name_and_modes_opened(tmp_path):
    tests = tmp_path / "tests"
    (tests / "sub").mkdir(parents=True)
    (tests / "test.sh").write_text("#!/bin/bash\n")
    (tests / "test.sh").chmod(0o700)
    (tests / "sub" / "data.txt").write_text("d")
    (tests / "sub" / "data.txt").chmod(0o600)
    (tests / "sub").chmod(0o700)
    extra = tmp_path / "elsewhere" / "expected.json"
    extra.parent.mkdir()
    extra.write_text("{}")
    os.utime(extra, (1_000_000, 1_000_000))
    dest = stage((tests, extra), tmp_path / "out" / "tests")
    assert dest == tmp_path / "out" / "tests"
    modes = {str(p.relative_to(dest)): p.stat().st_mode & 0o777 for p in dest.rglob("*")}
    assert modes == {"test.sh": 0o755, "sub": 0o755, "sub/data.txt": 0o644, "expected.json": 0o644}
    assert dest.stat().st_mode & 0o777 == 0o755
    assert (dest / "expected.json").stat().st_mtime == 1_000_000  # copied with its metadata
    assert (dest / "sub" / "data.txt").read_text() == "d"


def test_links_are_kept_as_links_and_their_targets_untouched(tmp_path):
    secret = tmp_path / "host-secret"
    secret.write_text("s")
    secret.chmod(0o600)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "leak").symlink_to(secret)
    dest = stage((tests,), tmp_path / "staged")
    assert os.readlink(dest / "leak") == str(secret)
    assert secret.stat().st_mode & 0o777 == 0o600


def test_staging_again_over_an_existing_folder(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "a").write_text("1")
    dest = tmp_path / "staged"
    stage((tests,), dest)
    (tests / "a").write_text("2")
    stage((tests,), dest)
    assert (dest / "a").read_text() == "2"
