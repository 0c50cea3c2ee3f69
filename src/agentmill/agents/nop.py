"""The nop agent does nothing: the check that a task's untouched state does not already pass."""

from __future__ import annotations

from agentmill.agents.base import AgentResult, ScriptedAgentBase
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task


class NopAgent(ScriptedAgentBase):
    name = "nop"
    version = "1"
    runs_one_command = True  # no command at all: no sandbox starts

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        return None
