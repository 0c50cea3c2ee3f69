"""The agent interface: an agent works inside a started sandbox until done or out of time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.traces.atif import Step


@dataclass
class AgentResult:
    """What the agent reports as it goes: kept even when the agent times out or fails."""

    steps: list[Step] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def next_id(self) -> int:
        return len(self.steps) + 1


class Agent(Protocol):
    name: ClassVar[str]
    version: ClassVar[str]
    needs_solution: ClassVar[bool]  # the oracle alone sees /solution

    @property
    def model_name(self) -> str | None: ...

    def identity(self) -> dict[str, Any]:
        """Everything about this agent that changes its trials: name, version, model, settings."""
        ...

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        """Work on the task. Fill `result` as you go."""
        ...


class ScriptedAgentBase:
    """Agents without a model (oracle, nop)."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    needs_solution: ClassVar[bool] = False
    model_name = None

    def identity(self) -> dict[str, Any]:
        return {"agent": self.name, "agent_version": self.version}
