"""An agent begun while its sandbox starts (`run_early`, agents/base.py): the trial's side.

The agent may ask the model meanwhile (terminus asks its first turn, docs/terminal.md); it must
wait for `SandboxStart.wait()` before it touches the sandbox. The trial keeps three promises here:
- the agent's time limit counts from the moment the sandbox is ready, not from its start;
- a sandbox is never stopped while it is still starting;
- a failed start is the sandbox's failure (`EarlyStartError`), whatever the agent made of it.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from agentmill.agents.base import Agent, AgentResult, SandboxStart
from agentmill.errors import SandboxStartError
from agentmill.rollout.result import Timings
from agentmill.sandbox.protocol import SandboxSpec
from agentmill.tasks.behaviour import behaviour_for
from agentmill.tasks.hashing import hash_text
from agentmill.tasks.model import Task


class EarlyStartError(SandboxStartError):
    """The sandbox's start failed while the agent ran early: `error` is what the start raised."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def runs_early(task: Task, agent: Agent) -> bool:
    """Whether the agent has `run_early`. Never for a kind whose state is built in the started
    sandbox before the agent begins (tool tasks)."""
    return not behaviour_for(task).prepared_before_agent and getattr(agent, "run_early", None) is not None


def start_key(image_key: str, spec: SandboxSpec) -> str:
    """The same for every sandbox whose start leaves the same state behind."""
    same = {
        "image": image_key,
        "workdir": spec.workdir,
        "hostname": spec.hostname,
        "env": spec.env,
        "mounts": sorted([*spec.ro_mounts, *spec.rw_mounts]),
        "network": spec.network,
        **({"internet": True} if spec.internet else {}),
    }
    return hash_text(json.dumps(same, sort_keys=True))


async def run_early(
    agent: Any, task: Task, sandbox, start: SandboxStart, result: AgentResult, timings: Timings, began: float
) -> None:
    """The agent, begun at `began` while its sandbox starts; sets timings.sandbox_start. Returns or
    raises only once the start is over; a start that failed is raised as EarlyStartError."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(None) as clock:
            live = True

            def ready(_) -> None:
                timings.sandbox_start = time.monotonic() - began
                if live and not clock.expired():
                    clock.reschedule(loop.time() + task.config.agent.timeout_sec)

            start.ready.add_done_callback(ready)
            try:
                await agent.run_early(task, sandbox, start, result)
            finally:
                live = False
    except asyncio.CancelledError:
        start.ready.cancel()  # a start cancelled stops what it began (the backend's own clean-up)
        await asyncio.wait({start.ready})
        raise
    except BaseException:
        await _start_over(start.ready)
        raise
    await _start_over(start.ready)


async def _start_over(ready: asyncio.Future) -> None:
    await asyncio.wait({ready})  # an agent may end (or fail) before its sandbox is ready
    if not ready.cancelled() and (error := ready.exception()) is not None:
        raise EarlyStartError(error) from None
