"""The embedded sandbox's small parts (sandbox/bwrap.py) exactly: the launch chain's argv, the
overlay's namespace, the host tools it needs, the root's skeleton and the clean-up. The sandboxes
themselves are in test_lifecycle.py, test_escape.py and the backend conformance suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentmill.errors import SandboxError
from agentmill.sandbox import bwrap
from agentmill.sandbox.bwrap import (
    CTL_DIR,
    LAUNCH_PATH,
    ROOT_SKELETON,
    ROOT_SYMLINKS,
    _clean_up,
    launch_argv,
    overlay_launch_env,
    overlay_namespace_argv,
    prepare_root,
    require_tools,
)
from agentmill.sandbox.guest_code import GUEST_DIR
from agentmill.sandbox.limits import prlimit_args
from agentmill.sandbox.protocol import Limits
from tests.conftest import sandbox


def test_the_launch_chain_joins_cgroups_sets_limits_then_drops_to_the_uid():
    limits = Limits(memory_mb=512, cpus=1.0)
    argv = launch_argv(["/sys/fs/cgroup/a/cgroup.procs", "/sys/fs/cgroup/b/cgroup.procs"], limits, 1234)
    assert argv == [
        "/bin/sh",
        "-c",
        'echo $$ > /sys/fs/cgroup/a/cgroup.procs && echo $$ > /sys/fs/cgroup/b/cgroup.procs && exec "$@"',
        "sh",
        "prlimit",
        *prlimit_args(limits),
        "--",
        "setpriv",
        "--reuid=1234",
        "--regid=1234",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]
    assert launch_argv([], limits, None) == [
        "/bin/sh",
        "-c",
        ' exec "$@"',
        "sh",
        "prlimit",
        *prlimit_args(limits),
        "--",
    ]


def test_the_overlays_namespace_maps_the_uid_as_root_or_our_own():
    assert overlay_namespace_argv(None) == ["unshare", "--user", "--map-root-user", "--mount"]
    assert overlay_namespace_argv(1234) == [
        "unshare",
        "--map-users=1234,0,1",
        "--map-groups=1234,0,1",
        "--setuid",
        "0",
        "--setgid",
        "0",
        "--mount",
    ]
    assert overlay_launch_env(None) == {}
    env = overlay_launch_env(1234)
    assert env["PATH"] == f"{bwrap.package_assets('idmap')}:{LAUNCH_PATH}"
    assert env["AGENTMILL_IDMAP"] == f"0 1234 1\\n1 {bwrap.TEMPLATE_UID} 1\\n"


@pytest.fixture
def no_tool_cache(monkeypatch):
    monkeypatch.setattr(bwrap, "_tools_found", set())


@pytest.mark.parametrize(
    ("absent", "overlay", "named"),
    [
        ({"bwrap"}, False, "bwrap"),
        ({"prlimit", "bwrap"}, False, "bwrap, prlimit"),
        ({"fuse-overlayfs"}, True, "fuse-overlayfs"),
        ({"unshare", "mount"}, True, "unshare, mount"),
        ({"setpriv"}, False, "setpriv"),  # as root: the uid drop needs it
    ],
)
def test_missing_host_tools_are_named_with_how_to_install_them(monkeypatch, no_tool_cache, absent, overlay, named):
    monkeypatch.setattr(bwrap.shutil, "which", lambda t: None if t in absent else f"/usr/bin/{t}")
    if os.geteuid() != 0 and absent == {"setpriv"}:
        pytest.skip("setpriv is needed as root only")
    with pytest.raises(SandboxError) as e:
        require_tools(overlay=overlay)
    hint = "apt-get install -y bubblewrap util-linux" + (" fuse-overlayfs" if overlay else "")
    assert str(e.value) == f"missing host tools: {named} (install: {hint})"


def test_overlay_tools_are_asked_only_for_an_overlay_and_found_tools_are_remembered(monkeypatch, no_tool_cache):
    asked = []
    monkeypatch.setattr(bwrap.shutil, "which", lambda t: asked.append(t) or (None if t == "fuse-overlayfs" else t))
    require_tools(overlay=False)
    assert "fuse-overlayfs" not in asked
    n = len(asked)
    require_tools(overlay=False)
    assert len(asked) == n  # remembered: no PATH search per start
    with pytest.raises(SandboxError):
        require_tools(overlay=True)


def test_the_root_gets_its_skeleton_links_and_private_folders_once(tmp_path):
    root = tmp_path / "r"
    root.mkdir(mode=0o700)
    (root / "lib64").mkdir()  # an image's real folder is kept, not replaced by the link
    prepare_root(root)
    assert oct(root.stat().st_mode & 0o777) == "0o755"
    assert all((root / d).is_dir() for d in ROOT_SKELETON)
    assert {n: os.readlink(root / n) for n in ROOT_SYMLINKS if (root / n).is_symlink()} == {
        n: t for n, t in ROOT_SYMLINKS.items() if n != "lib64"
    }
    ours = root / GUEST_DIR.lstrip("/").split("/")[0]
    assert oct(ours.stat().st_mode & 0o777) == "0o700"
    assert (root / GUEST_DIR.lstrip("/")).is_dir() and (root / CTL_DIR.lstrip("/")).is_dir()
    os.chmod(ours, 0o750)
    prepare_root(root)  # again: nothing replaced
    assert oct(ours.stat().st_mode & 0o777) == "0o750"


def test_clean_up_removes_every_folder_and_file_it_is_given(tmp_path):
    folders = {name: tmp_path / name for name in ("ovl", "work", "ctl")}
    for f in folders.values():
        (f / "sub").mkdir(parents=True)
        (f / "sub" / "x").write_text("x")
    stderr = tmp_path / "ctl.stderr"
    stderr.write_text("boot log")
    resolv = tmp_path / "ctl.resolv"
    resolv.write_text("nameserver 10.0.2.3\n")
    r, w = os.pipe()
    _clean_up(None, folders["ovl"], folders["ctl"], stderr, w, folders["work"])
    assert not any(p.exists() for p in (*folders.values(), stderr, resolv))
    with pytest.raises(OSError):
        os.fstat(w)  # the guest socket's descriptor is closed
    os.close(r)
    _clean_up(None, tmp_path / "gone", tmp_path / "gone2", tmp_path / "gone.stderr", None, tmp_path / "gone3")
    _clean_up(None, None, None, None, None)  # nothing to do is not an error
    assert Path(tmp_path).is_dir()


# -- the guest's failures, seen from the host ------------------------------------------------------


def _root(tmp_path_factory_name: str) -> Path:
    import shutil

    from agentmill.runtime.paths import scratch_dir

    root = scratch_dir() / "test-bwrap-parts" / f"{tmp_path_factory_name}-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root


def test_a_sandbox_never_started_stops_cleanly(tmp_path):
    import asyncio

    from agentmill.sandbox.bwrap import BwrapSandbox
    from agentmill.sandbox.protocol import SandboxSpec

    sb = BwrapSandbox(SandboxSpec(rootfs=tmp_path))
    asyncio.run(sb.stop())
    assert not sb.alive


@sandbox
def test_a_guest_that_stops_answering_is_given_up_after_the_grace(monkeypatch):
    import asyncio
    import time

    from agentmill.sandbox.bwrap import BwrapSandbox
    from agentmill.sandbox.protocol import SandboxSpec

    monkeypatch.setattr(bwrap, "_RPC_GRACE", 0.5)

    async def main():
        async with BwrapSandbox(SandboxSpec(rootfs=_root("frozen"))) as sb:
            started = time.monotonic()
            with pytest.raises(SandboxError, match="^sandbox guest did not answer in time$"):
                await sb.exec("kill -STOP $PPID; sleep 5", timeout=0.5)  # the guest server itself frozen
            return time.monotonic() - started

    assert asyncio.run(main()) < 5


@sandbox
def test_a_guest_that_dies_mid_request_is_a_sandbox_error_with_its_exit_status():
    import asyncio

    from agentmill.sandbox.bwrap import BwrapSandbox
    from agentmill.sandbox.protocol import SandboxSpec

    async def main():
        async with BwrapSandbox(SandboxSpec(rootfs=_root("killed"))) as sb:
            with pytest.raises(
                SandboxError, match=r"^sandbox guest closed the connection \((exit status 137|still running)\)"
            ):
                await sb.exec("kill -KILL $PPID; sleep 5", timeout=5)

    asyncio.run(main())


@sandbox
def test_read_only_mounts_and_the_package_database_are_in_the_sandbox(tmp_path):
    import asyncio
    import shutil

    from agentmill.runtime.paths import scratch_dir
    from agentmill.sandbox.bwrap import BwrapSandbox
    from agentmill.sandbox.protocol import SandboxSpec

    data = scratch_dir() / "test-bwrap-parts" / f"data-{os.getpid()}"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    (data / "in.txt").write_text("mounted")
    data.chmod(0o755)
    (data / "in.txt").chmod(0o644)

    async def main():
        spec = SandboxSpec(rootfs=_root("mounts"), ro_mounts={"/data": data, "/srv/deep/more": data})
        async with BwrapSandbox(spec) as sb:
            read = await sb.exec("cat /data/in.txt /srv/deep/more/in.txt", timeout=10)
            write = await sb.exec("echo x > /data/new.txt", timeout=10)
            dpkg = await sb.exec("test -s /var/lib/dpkg/status && echo present", timeout=10)
            return read, write, dpkg

    read, write, dpkg = asyncio.run(main())
    assert read.stdout == "mountedmounted" and write.returncode != 0 and not (data / "new.txt").exists()
    if Path("/var/lib/dpkg/status").exists():  # the host's package database, for tools that ask it
        assert dpkg.stdout.strip() == "present"
