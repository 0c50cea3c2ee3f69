"""Replay a tool task's reference calls (solution/calls.json) as the oracle's trajectory.

Each call is one agent step with its tool call and observation, so oracle traces are
demonstrations in the same shape as a model's. A call that errors is recorded in
`result.metadata["replay_errors"]` (a lint for `check`: today's benchmarks ignore such errors)
and replay goes on, as a model's trajectory would.
"""

from __future__ import annotations

from agentmill.agents.base import AgentResult
from agentmill.tasks.model import Task
from agentmill.tools.session import ToolSession
from agentmill.tools.state import require_spec
from agentmill.traces.atif import Observation, ObservationResult, Step, ToolCall


async def replay_reference(task: Task, session: ToolSession, result: AgentResult) -> None:
    spec = require_spec(task)
    if spec.calls is None:
        raise RuntimeError(f"{task.path}: no solution/calls.json to replay")
    errors = result.metadata.setdefault("replay_errors", [])
    # the conversation a tools agent would have had: system spec and prompt first, the tool list
    # offered recorded on the first step (as agents/conversation.py does), so exports are demos
    opening = [("system", task.system.strip())] if task.system and task.system.strip() else []
    opening.append(("user", task.instruction.strip()))
    for i, (source, text) in enumerate(opening):
        result.steps.append(
            Step(
                step_id=result.next_id(),
                source=source,
                message=text,
                extra={"tools": session.tools} if i == 0 and session.tools else None,
            )
        )
    for i, call in enumerate(spec.calls):
        call_id = f"call_{i + 1}"
        step = Step(
            step_id=result.next_id(),
            source="agent",
            message="",
            tool_calls=[ToolCall(tool_call_id=call_id, function_name=call.tool, arguments=dict(call.arguments))],
        )
        result.steps.append(step)
        out = await session.call(call.tool, dict(call.arguments))
        step.observation = Observation(results=[ObservationResult(source_call_id=call_id, content=out.content)])
        if out.is_error:
            step.extra = {"is_error": True}
            errors.append({"index": i, "tool": call.tool, "error": out.content[:500]})
    if spec.answer is not None:
        result.steps.append(Step(step_id=result.next_id(), source="agent", message=spec.answer))
    result.metadata["tool_calls"] = result.metadata.get("tool_calls", 0) + len(spec.calls)
