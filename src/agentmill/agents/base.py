"""The agent interface: an agent works inside a started sandbox until done or out of time.

An agent may also begin while its sandbox still starts (`run_early`), to ask the model its first
question meanwhile; it must not touch the sandbox before `SandboxStart.wait()` returns."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.traces.atif import Step

Rendering = Literal["text", "tool_calls"]


@dataclass
class AgentResult:
    """What the agent reports as it goes: kept even when the agent times out or fails."""

    steps: list[Step] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def next_id(self) -> int:
        return len(self.steps) + 1


@dataclass
class SandboxStart:
    """A trial's sandbox while it starts. `key` is the same for every sandbox whose start leaves the
    same state behind (image, working folder, environment, hostname, mounts); `ready` is done once
    the sandbox has started, or with the start's error."""

    key: str
    ready: asyncio.Future

    async def wait(self) -> None:
        """Until the sandbox has started; raises what its start raised. Cancelling the waiter leaves
        the start running (the trial stops the sandbox once the start is over)."""
        await asyncio.shield(self.ready)


class Agent(Protocol):
    """What every agent declares (checked when it is registered, see agents/registry.py)."""

    name: ClassVar[str]
    version: ClassVar[str]
    needs_solution: ClassVar[bool]  # the oracle alone sees /solution
    needs_model: ClassVar[bool]  # built with a ModelClient as first argument
    task_kinds: ClassVar[frozenset[str]]  # the task kinds it can work on ("terminal", "tools", ...)
    # how its trajectories become training rows: "text" = the tool protocol lives in the reply text
    # (terminus' JSON), observations are user turns; "tool_calls" = native assistant tool_calls
    # answered by role:tool messages
    rendering: ClassVar[Rendering]

    @property
    def model_name(self) -> str | None: ...

    def identity(self) -> dict[str, Any]:
        """Everything about this agent that changes its trials: name, version, model, settings."""
        ...

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        """Work on the task. Fill `result` as you go."""
        ...

    # Optional: `async def run_early(task, sandbox, start: SandboxStart, result)`, the same work
    # begun while the sandbox starts. The trial calls it instead of `run` where an agent has it.


class ScriptedAgentBase:
    """Agents without a model (oracle, nop)."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    needs_solution: ClassVar[bool] = False
    needs_model: ClassVar[bool] = False
    task_kinds: ClassVar[frozenset[str]] = frozenset({"terminal", "tools"})
    rendering: ClassVar[Rendering] = "tool_calls"
    # Its run on a terminal task is at most one exec without stdin: the trial then gives it a
    # sandbox that is that command's whole life, with no guest server (sandbox/command.py).
    runs_one_command: ClassVar[bool] = False
    model_name = None

    def identity(self) -> dict[str, Any]:
        return {"agent": self.name, "agent_version": self.version}


class ModelAgentBase:
    """Agents driven by a model (terminus, tools): a client, a turn budget, an optional context cap,
    and the identity every trial of theirs is keyed by."""

    name: ClassVar[str]  # declared by each agent
    version: ClassVar[str]
    needs_solution: ClassVar[bool] = False
    needs_model: ClassVar[bool] = True

    def __init__(self, client: Any, *, max_turns: int = 50, max_context: int | None = None):
        self.client = client
        self.max_turns = max_turns
        self.max_context = max_context

    @property
    def model_name(self) -> str:
        return self.client.model

    def identity(self) -> dict[str, Any]:
        ident = {
            "agent": self.name,
            "agent_version": self.version,
            "max_turns": self.max_turns,
            "model": self.client.model,
            "sampling": self.client.sampling.model_dump(),
        }
        if self.max_context is not None:
            ident["max_context"] = self.max_context
        return ident
