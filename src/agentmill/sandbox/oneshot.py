"""One command in a throwaway sandbox: the `agentmill sandbox run` verb and outside checks."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from agentmill.runtime.paths import ensure_traversable, scratch_temp
from agentmill.sandbox.protocol import ExecResult, Limits, SandboxSpec
from agentmill.sandbox.registry import create_sandbox


async def run_once(
    command: list[str], *, workspace: Path | None = None, timeout: float = 60.0, memory_mb: int = 2048
) -> ExecResult:
    scratch = scratch_temp("oneshot")
    rw, workdir, owner = {}, "/root", None
    if workspace is not None:
        workspace = workspace.resolve()
        workspace.mkdir(parents=True, exist_ok=True)
        ensure_traversable(workspace)
        st = workspace.stat()
        owner = (st.st_uid, st.st_gid)
        rw[str(workspace)] = workspace
        workdir = str(workspace)
    spec = SandboxSpec(rootfs=scratch / "rootfs", rw_mounts=rw, workdir=workdir, limits=Limits(memory_mb=memory_mb))
    (scratch / "rootfs").mkdir()
    try:
        async with create_sandbox(spec) as sb:
            return await sb.exec(command, timeout=timeout)
    finally:
        if owner is not None and os.geteuid() == 0:  # hand the workspace back to its owner
            subprocess.run(["chown", "-R", "-h", f"{owner[0]}:{owner[1]}", str(workspace)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
