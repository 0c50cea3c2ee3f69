"""images/tree_copy.py against the real `cp -a`: the same tree, entry by entry, whichever did the copy."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from agentmill.images import tree_copy
from agentmill.images.tree_copy import copy_tree

ROOT = os.geteuid() == 0
OLD = 1_000_000_000_123_456_789  # 2001, with nanoseconds


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry's kind, mode, owner, times and content (a link's target), the root's included."""
    out = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            body = os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            body = path.read_bytes()
        else:
            body = None
        out[str(path.relative_to(root))] = (
            stat.S_IFMT(st.st_mode),
            stat.S_IMODE(st.st_mode),
            st.st_uid,
            st.st_gid,
            st.st_mtime_ns,
            st.st_atime_ns,
            body,
        )
    return out


def times(path: Path) -> None:
    # atime after mtime and ctime: reading the source (relatime) then leaves it as it is
    os.utime(path, ns=(time.time_ns() + 3600 * 10**9, OLD), follow_symlinks=False)


def make_tree(src: Path, outside: Path) -> None:
    """Folders of several modes, files of several modes and owners, links of every kind."""
    outside.write_text("not part of the tree\n")
    (src / "a" / "b").mkdir(parents=True)
    (src / "locked").mkdir()
    (src / "a" / "b" / "deep.txt").write_text("deep\n")
    (src / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (src / "secret").write_text("only the owner\n")
    (src / "empty").write_bytes(b"")
    (src / "big.bin").write_bytes(os.urandom(300_000))
    (src / "locked" / "inside").write_text("x\n")
    os.symlink("a/b/deep.txt", src / "rel-link")
    os.symlink(str(outside), src / "abs-link")  # must stay a link: its target is outside the tree
    os.symlink("/nonexistent/target", src / "dangling")
    os.symlink(str(outside.parent), src / "dir-link")  # never descended into
    os.chmod(src / "run.sh", 0o755)
    os.chmod(src / "secret", 0o400)
    if ROOT:
        os.chown(src / "secret", 1234, 5678)
        os.chown(src / "a", 4321, 4321)
        os.chown(src / "rel-link", 777, 888, follow_symlinks=False)
        os.chmod(src / "run.sh", 0o4755)  # set-uid survives only if mode is set after the owner
    for path in sorted(src.rglob("*"), key=lambda p: -len(p.parts)):
        times(path)
    os.chmod(src / "locked", 0o500)
    os.chmod(src / "a", 0o750)
    os.chmod(src, 0o751)
    times(src)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    make_tree(src, tmp_path / "outside.txt")
    return src


def cp_calls(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = subprocess.run

    def spy(argv, *a, **kw):
        calls.append(list(argv))
        return real(argv, *a, **kw)

    monkeypatch.setattr(tree_copy.subprocess, "run", spy)
    return calls


def test_a_small_tree_is_copied_in_process_exactly_as_cp_would(tree: Path, tmp_path: Path, monkeypatch) -> None:
    subprocess.run(["cp", "-a", "--reflink=auto", str(tree), str(tmp_path / "by-cp")], check=True)
    calls = cp_calls(monkeypatch)
    copy_tree(tree, tmp_path / "ours")
    assert calls == []  # no program started
    assert snapshot(tmp_path / "ours") == snapshot(tmp_path / "by-cp")
    assert snapshot(tmp_path / "ours") == snapshot(tree)
    assert (tmp_path / "ours" / "abs-link").is_symlink()  # a link stays a link, whatever it points at
    assert (tmp_path / "ours" / "dir-link").is_symlink()  # a link to a folder is not descended into


def test_into_an_existing_folder_takes_the_sources_own_attributes(tree: Path, tmp_path: Path) -> None:
    by_cp, ours = tmp_path / "by-cp", tmp_path / "ours"
    for home in (by_cp, ours):
        home.mkdir()
        os.chmod(home, 0o711)
    subprocess.run(["cp", "-a", "--reflink=auto", f"{tree}/.", str(by_cp)], check=True)
    copy_tree(tree, ours, into=True)
    assert snapshot(ours) == snapshot(by_cp)
    assert stat.S_IMODE(os.lstat(ours).st_mode) == 0o751


@pytest.mark.parametrize("odd", ["hard link", "fifo", "extended attribute", "past the budget"])
def test_what_only_cp_keeps_goes_to_cp(odd: str, tree: Path, tmp_path: Path, monkeypatch) -> None:
    os.chmod(tree, 0o755)
    if odd == "hard link":
        os.link(tree / "empty", tree / "empty-again")
    elif odd == "fifo":
        os.mkfifo(tree / "pipe")
    elif odd == "extended attribute":
        try:
            os.setxattr(tree / "empty", "user.agentmill", b"1")
        except OSError:
            pytest.skip("this file system keeps no user extended attributes")
    else:
        monkeypatch.setattr(tree_copy, "IN_PROCESS_ENTRIES", 3)
    subprocess.run(["cp", "-a", "--reflink=auto", str(tree), str(tmp_path / "by-cp")], check=True)
    calls = cp_calls(monkeypatch)
    copy_tree(tree, tmp_path / "ours")
    assert [c[0] for c in calls] == ["cp"]
    assert snapshot(tmp_path / "ours") == snapshot(tmp_path / "by-cp")
    if odd == "hard link":
        assert os.lstat(tmp_path / "ours" / "empty").st_ino == os.lstat(tmp_path / "ours" / "empty-again").st_ino
