"""The agent interface: an agent works inside a started sandbox until done or out of time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task


@dataclass
class AgentResult:
    """What the agent reports. `steps` is the trajectory so far (ATIF step dicts)."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


class Agent(Protocol):
    name: ClassVar[str]
    version: ClassVar[str]
    needs_solution: ClassVar[bool]  # the oracle alone sees /solution

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        """Work on the task. Fill `result` as you go: it is kept even on timeout or error."""
        ...
