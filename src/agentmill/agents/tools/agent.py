"""`tools`: an agent that works a tool task through native OpenAI function calling.

Each request carries the task's tools (`tools`); the model answers with tool calls (several at once
are run in the order given, each answered by its own `role: tool` message) or with a plain answer,
which ends the episode. A call to an unknown tool, arguments that are not a JSON object or that
break the tool's schema come back to the model as an error result and are counted. `max_turns`
and the task's agent timeout bound it. Every message is recorded exactly as sent
(agents/conversation.py), so the trajectory renders back to this very conversation.
"""

from __future__ import annotations

import json

from agentmill.agents.base import AgentResult, ModelAgentBase
from agentmill.agents.conversation import Conversation
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.tools import open_tool_session


class ToolsAgent(ModelAgentBase):
    name = "tools"
    version = "1"
    task_kinds = frozenset({"tools"})
    rendering = "tool_calls"

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        if task.kind not in self.task_kinds:
            raise RuntimeError(f"the tools agent works on tool tasks; {task.name} is a '{task.kind}' task")
        stats = result.metadata.setdefault(
            "tools",
            {
                "turns": 0,
                "tool_calls": 0,
                "tool_errors": 0,
                "unknown_tools": 0,
                "invalid_arguments": 0,
                "answered": False,
            },
        )
        async with open_tool_session(task, sandbox) as session:
            known = {t["function"]["name"] for t in session.tools}
            chat = Conversation(self.client, result, stats, max_context=self.max_context, tools=session.tools)
            if task.system and task.system.strip():
                chat.say("system", task.system.strip())
            chat.say("user", task.instruction.strip())
            for _turn in range(self.max_turns):
                turn = await chat.ask()
                stats["turns"] += 1
                if not turn.calls:  # a plain answer ends the episode
                    stats["answered"] = True
                    return
                errors = 0
                for call in turn.calls:
                    stats["tool_calls"] += 1
                    arguments = _arguments(call.arguments_text)
                    if call.name not in known:
                        stats["unknown_tools"] += 1
                    if arguments is None:
                        stats["invalid_arguments"] += 1
                        content, is_error = (
                            (f"arguments of '{call.name}' must be a JSON object, got: {call.arguments_text[:200]}"),
                            True,
                        )
                    else:
                        out = await session.call(call.name, arguments)
                        content, is_error = out.content, out.is_error
                    errors += is_error
                    chat.tool_result(turn.step, call.id, content)
                if errors:
                    stats["tool_errors"] += errors
                    turn.step.extra = {**(turn.step.extra or {}), "tool_errors": errors}
        stats["max_turns_reached"] = True


def _arguments(text: str) -> dict | None:
    """The call's arguments as an object; None when they are not one (an empty text is no arguments)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
