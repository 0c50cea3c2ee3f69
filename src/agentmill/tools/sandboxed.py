"""A throwaway sandbox for one tool task, outside a trial: `tools serve`, `check`'s mutants, benchmarks, tests.

Trials build their own sandboxes (rollout/trial.py); this is the same image and limits, with the
rootfs kept where the caller says so the state can be inspected or reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

from agentmill.images import ImageBuilder
from agentmill.runtime.paths import scratch_temp
from agentmill.sandbox.protocol import Limits, Sandbox
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks.model import Task


def task_limits(task: Task) -> Limits:
    env = task.config.environment
    return Limits(memory_mb=env.memory_mb, cpus=env.cpus, storage_mb=env.storage_mb)


@contextlib.asynccontextmanager
async def task_sandbox(
    task: Task,
    *,
    builder: ImageBuilder | None = None,
    rootfs: Path | None = None,
    ro_mounts: dict[str, Path] | None = None,
) -> AsyncIterator[Sandbox]:
    """A started sandbox over a fresh copy of the task's image (or over `rootfs` when given and existing)."""
    builder = builder or ImageBuilder()
    image = await builder.get(task)
    scratch = scratch_temp("tools")
    try:
        if rootfs is None or not rootfs.exists():
            target = rootfs or scratch / "rootfs"
            await asyncio.to_thread(image.instantiate, target)
            rootfs = target
        sandbox = create_sandbox(image.spec(rootfs, limits=task_limits(task), ro_mounts=dict(ro_mounts or {})))
        await sandbox.start()
        try:
            yield sandbox
        finally:
            await sandbox.stop()
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)
