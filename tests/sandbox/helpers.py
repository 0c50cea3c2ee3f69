"""Start a bare sandbox over a fresh root for a test."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentmill.paths import scratch_temp
from agentmill.sandbox import BwrapSandbox, Limits, SandboxSpec


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
