"""Building the verifier toolkit (verify/toolkit.py) into a scratch cache: its layout, its modes, its
key, the built-once Python environment, and a failed build. The toolkit's use by real verifiers is
in test_toolkit.py; on a machine that has it cached, no test there builds one."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from agentmill.runtime.paths import package_assets
from agentmill.verify import toolkit


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTMILL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def fake_venv(monkeypatch, tmp_path):
    """The Python environment stands where _ensure_venv puts it: a folder with one file (no registry)."""
    venv = tmp_path / "venv-src" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    os.chmod(venv / "bin" / "python", 0o700)
    calls = []
    monkeypatch.setattr(toolkit, "_ensure_venv", lambda root: calls.append(root) or venv)
    return calls


def test_the_toolkit_is_assembled_once_with_shims_in_bin_python_in_lib_readable_by_all(cache, fake_venv):
    assert toolkit.ensure_toolkit(build=False) is None
    dest = toolkit.ensure_toolkit()
    assert dest == toolkit.toolkit_path() and dest.parent == cache / "toolkit"
    assert fake_venv == [cache / "toolkit"]
    assert (dest / ".ready").read_text() == "ok\n"
    assert (dest / "venv" / "bin" / "python").is_file()
    shims = {
        f.name for src in (package_assets("shims"), package_assets("toolkit")) for f in src.iterdir() if f.is_file()
    }
    placed = {f.name: f.parent.name for sub in ("bin", "lib") for f in (dest / sub).iterdir()}
    assert set(placed) == shims
    assert all(where == ("lib" if name.endswith(".py") else "bin") for name, where in placed.items())
    assert (dest / "bin" / "curl").read_bytes() == (
        package_assets("toolkit") / "curl"
    ).read_bytes()  # the toolkit's wins
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in dest.rglob("*") if not p.is_symlink()}
    assert all(m & 0o044 == 0o044 and not m & 0o022 for m in modes.values())  # a+r, no group/other write
    assert stat.S_IMODE((dest / "venv/bin/python").stat().st_mode) == 0o755  # a+X where someone could execute
    assert not list(dest.parent.glob("*.tmp*"))
    assert toolkit.ensure_toolkit(build=False) == dest and toolkit.ensure_toolkit() == dest
    assert len(fake_venv) == 1  # built once


def test_a_half_built_toolkit_is_built_again(cache, fake_venv):
    dest = toolkit.toolkit_path()
    (dest / "bin").mkdir(parents=True)
    (dest / "bin" / "stale").write_text("x")  # no .ready: a build that died
    assert toolkit.ensure_toolkit() == dest
    assert not (dest / "bin" / "stale").exists() and (dest / ".ready").exists()


def test_no_python_environment_means_no_toolkit(cache, monkeypatch):
    monkeypatch.setattr(toolkit, "_ensure_venv", lambda root: None)
    assert toolkit.ensure_toolkit() is None and not toolkit.toolkit_path().exists()


def test_the_key_follows_the_layout_and_the_packages(cache, monkeypatch):
    key = toolkit.toolkit_path()
    monkeypatch.setattr(toolkit, "LAYOUT", "other")
    assert toolkit.toolkit_path() != key
    monkeypatch.setattr(toolkit, "LAYOUT", "3")
    monkeypatch.setattr(toolkit, "PACKAGES", ("pytest",))
    assert toolkit.toolkit_path() != key


def test_the_python_environment_sees_the_system_packages_and_is_built_once(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(toolkit, "PACKAGES", ("--help",))  # pip runs, installs nothing: no registry needed
    stale = toolkit.venv_dir(tmp_path).with_name(toolkit.venv_dir(tmp_path).name + f".tmp{os.getpid()}")
    stale.mkdir(parents=True)
    (stale / "junk").write_text("a half-built environment of this pid")
    unready = toolkit.venv_dir(tmp_path)
    unready.mkdir()
    (unready / "left").write_text("a build that died before .ready")
    venv = toolkit._ensure_venv(tmp_path)
    assert capfd.readouterr() == ("", "")  # the builders' output is kept, not printed over a run's progress
    assert not (venv.parent / "junk").exists() and not (venv.parent / "left").exists()
    assert venv is not None and venv.name == "venv" and (venv.parent / ".ready").read_text() == "ok\n"
    assert venv.parent.name.startswith("venv-") and not list(tmp_path.glob("*.tmp*"))
    assert "include-system-site-packages = true" in (venv / "pyvenv.cfg").read_text()
    out = subprocess.run(
        [str(venv / "bin/python"), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True
    )
    assert out.stdout.strip() == str(venv)
    (venv / "marker").write_text("kept")
    assert toolkit._ensure_venv(tmp_path) == venv and (venv / "marker").exists()


def test_a_failed_install_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(toolkit, "PACKAGES", ("agentmill-no-such-package-zz",))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # fail fast, offline
    assert toolkit._ensure_venv(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_the_toolkit_leads_path():
    assert toolkit.toolkit_env("/usr/bin:/bin") == {"PATH": f"{toolkit.MOUNT}/bin:/usr/bin:/bin"}


def test_a_toolkit_another_process_finished_while_this_one_waited_is_taken_as_is(cache, fake_venv, monkeypatch):
    dest = toolkit.toolkit_path()

    def lock_then_find_it_built(fd, op):  # the other builder held the lock and finished meanwhile
        dest.mkdir(parents=True, exist_ok=True)
        (dest / ".ready").write_text("ok\n")

    monkeypatch.setattr(toolkit.fcntl, "flock", lock_then_find_it_built)
    assert toolkit.ensure_toolkit() == dest
    assert fake_venv == []  # not built again


def test_a_stale_half_copy_of_this_process_is_cleared_first(cache, fake_venv):
    dest = toolkit.toolkit_path()
    stale = dest.with_name(dest.name + f".tmp{os.getpid()}")
    (stale / "bin").mkdir(parents=True)
    (stale / "bin" / "junk").write_text("x")
    assert toolkit.ensure_toolkit() == dest
    assert not (dest / "bin" / "junk").exists() and not stale.exists()


def test_a_python_environment_that_cannot_be_copied_stops_the_build(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(toolkit, "_ensure_venv", lambda root: tmp_path / "no-such-venv")
    with pytest.raises(subprocess.CalledProcessError):
        toolkit.ensure_toolkit()
    assert not (toolkit.toolkit_path() / ".ready").exists()


def test_the_keys_follow_every_input(cache, monkeypatch, tmp_path):
    import shutil

    from agentmill.runtime import paths

    key, venv = toolkit.toolkit_path(), toolkit.venv_dir(tmp_path)
    assert len(key.name) == 16 and len(venv.name) == len("venv-") + 16
    real_assets = paths.package_assets
    for which in ("toolkit", "shims"):  # a changed shim makes a new toolkit (its environment is reused)
        changed = tmp_path / which
        shutil.copytree(real_assets(which), changed)
        (changed / "extra").write_text("x")
        monkeypatch.setattr(toolkit, "package_assets", lambda n, w=which, c=changed: c if n == w else real_assets(n))
        assert toolkit.toolkit_path() != key and toolkit.venv_dir(tmp_path) == venv
        monkeypatch.setattr(toolkit, "package_assets", real_assets)
    real_realpath = os.path.realpath
    monkeypatch.setattr(
        toolkit.os.path, "realpath", lambda p: "/usr/bin/python3.99" if p == "/usr/bin/python3" else real_realpath(p)
    )
    assert toolkit.toolkit_path() != key and toolkit.venv_dir(tmp_path) != venv  # another host Python
    monkeypatch.setattr(toolkit.os.path, "realpath", real_realpath)
    for name, value in (("LAYOUT", "other"), ("PACKAGES", ("pytest",))):
        monkeypatch.setattr(toolkit, name, value)
        assert toolkit.venv_dir(tmp_path) != venv, name
        monkeypatch.undo()
        monkeypatch.setenv("AGENTMILL_CACHE", str(cache))


def test_python_files_go_to_lib_readable_not_executable(cache, fake_venv):
    dest = toolkit.ensure_toolkit()
    libs = list((dest / "lib").iterdir())
    assert libs and all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in libs)
