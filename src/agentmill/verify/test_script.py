"""The test-script verifier: run the task's tests over the agent's final state in a fresh sandbox.

A fresh sandbox (not the agent's) means no process the agent left behind can touch the tests or
the reward file, and /tests is never visible while the agent runs.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import SandboxError
from agentmill.images import Image
from agentmill.sandbox.protocol import Sandbox
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks.model import Task
from agentmill.verify.outcome import Outcome, RewardError, parse_reward
from agentmill.verify.staging import stage
from agentmill.verify.toolkit import MOUNT, ensure_toolkit, toolkit_env

_KEEP_OUTPUT = 64 << 10


@dataclass
class VerifierResult:
    outcome: Outcome
    reward: float | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    error: str | None = None
    seconds: float = 0.0


async def verify(task: Task, image: Image, rootfs: Path, scratch: Path, limits) -> VerifierResult:
    started = time.monotonic()
    tests = stage(task.tests_sources, scratch / "tests")
    logs = scratch / "verifier-logs"
    logs.mkdir(parents=True, exist_ok=True)
    mounts = {"/tests": tests}
    env = dict(task.config.verifier.env)
    toolkit = await asyncio.to_thread(ensure_toolkit, build=True)
    if toolkit is not None:
        mounts[MOUNT] = toolkit
    spec = image.spec(rootfs, limits=limits, ro_mounts=mounts, rw_mounts={"/logs/verifier": logs})
    try:
        async with create_sandbox(spec) as sb:
            if toolkit is not None:
                env = {**toolkit_env(sb.base_env()["PATH"]), **env}
            run = await sb.exec(["bash", f"/tests/{task.test_script}"], timeout=task.config.verifier.timeout_sec,
                                env=env, max_output=_KEEP_OUTPUT)
            result = VerifierResult(Outcome.FAILED, stdout=run.stdout, stderr=run.stderr, returncode=run.returncode)
            if run.timed_out:
                result.outcome = Outcome.VERIFIER_TIMEOUT
                result.error = f"verifier exceeded {task.config.verifier.timeout_sec:g}s"
                return result
            txt = await _maybe_read(sb, "/logs/verifier/reward.txt")
            js = await _maybe_read(sb, "/logs/verifier/reward.json") if txt is None else None
    except SandboxError as e:
        return VerifierResult(Outcome.SANDBOX_ERROR, error=str(e), seconds=time.monotonic() - started)
    try:
        if txt is None and js is None and task.format == "terminal-bench":
            # Terminal-Bench's verdict is the test script's exit status.
            result.reward, result.rewards = (1.0 if run.returncode == 0 else 0.0), {}
        else:
            result.reward, result.rewards = parse_reward(txt, js)
        result.outcome = Outcome.PASSED if result.reward >= 1.0 - 1e-9 else Outcome.FAILED
    except RewardError as e:
        result.outcome, result.error = Outcome.VERIFIER_ERROR, str(e)
    result.seconds = time.monotonic() - started
    return result


async def _maybe_read(sb: Sandbox, path: str) -> bytes | None:
    try:
        return await sb.read_file(path, max_bytes=1 << 20)
    except FileNotFoundError:
        return None
    except SandboxError as e:  # a directory, a dangling link, unreadable: the verifier's fault
        return f"<unreadable: {e}>".encode()
