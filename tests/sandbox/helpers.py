"""Start a bare sandbox over a fresh root for a test."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
from pathlib import Path

from agentmill.runtime.paths import scratch_temp
from agentmill.sandbox import BwrapSandbox, Limits, SandboxSpec, launcher, launcher_server


def fresh_spec(**kw) -> SandboxSpec:
    scratch = scratch_temp("test")  # swept by a later run once this process is gone
    (scratch / "rootfs" / "app").mkdir(parents=True)
    kw.setdefault("workdir", "/app")
    return SandboxSpec(rootfs=scratch / "rootfs", **kw)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


async def in_sandbox(script: str, timeout: float = 30, limits: Limits | None = None, **kw):
    spec = fresh_spec(limits=limits or Limits(), **kw)
    async with BwrapSandbox(spec) as sb:
        return await sb.exec(script, timeout=timeout)


CAP_NET_RAW = 13


@contextlib.contextmanager
def launcher_carrying_privileges():
    """A fresh launcher for this process that carries what a sandbox must lose: a supplementary
    group and an inheritable capability (root here has neither by itself), so that a drop step left
    out shows in what it starts. Root only."""
    old = launcher._launcher
    launcher._launcher = None
    header = launcher_server._CapHeader(launcher_server._LINUX_CAPABILITY_VERSION_3, 0)
    data = (launcher_server._CapData * 2)()
    assert launcher_server._libc.capget(ctypes.byref(header), data) == 0
    before, groups = data[0].inheritable, os.getgroups()
    data[0].inheritable |= 1 << CAP_NET_RAW
    os.setgroups([4242])
    assert launcher_server._libc.capset(ctypes.byref(header), data) == 0  # this thread's: the launcher's parent
    try:
        started = launcher._current()
    finally:
        data[0].inheritable = before
        launcher_server._libc.capset(ctypes.byref(header), data)
        os.setgroups(groups)
    st = proc_status(started.proc.pid)
    assert "4242" in st["Groups"].split() and int(st["CapInh"], 16), "the launcher should carry them"
    try:
        yield started
    finally:
        started.proc.kill()
        started.proc.wait()
        started.sock.close()
        launcher._launcher = old


def proc_status(pid: int) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)
