"""Render a trajectory as the chat the model saw: OpenAI-style messages, for every SFT format.

Agents that speak JSON in their text (terminus) are rendered natively: the assistant's reply as
written, the terminal's answer as the next user message, exactly the conversation it was trained
to continue. Agents that call tools are rendered with assistant `tool_calls` and `role: tool`
results. Reasoning is rendered Qwen3-style as `<think>...</think>` before the answer, or dropped.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from agentmill.traces.atif import Step, Trajectory
from agentmill.traces.redact import redact
from agentmill.traces.text import clean_text

Reasoning = Literal["think", "drop"]

TOOL_SCHEMAS = {
    "bash": {"type": "function", "function": {"name": "bash", "description": "Run a shell command.",
                                              "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                                                             "required": ["command"]}}},
}


class Rendered:
    """messages + tools, and how many secrets were redacted on the way."""

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict], redactions: int):
        self.messages, self.tools, self.redactions = messages, tools, redactions


def render(trajectory: Trajectory, *, reasoning: Reasoning = "think") -> Rendered:
    native = rendering_of(trajectory) == "text"
    messages: list[dict[str, Any]] = []
    tools: dict[str, dict] = {}
    redactions = 0

    def text(value: str | None) -> str:
        nonlocal redactions
        cleaned, n = redact(clean_text(value))
        redactions += n
        return cleaned

    for step in trajectory.steps:
        if step.source in ("system", "user"):
            messages.append({"role": step.source, "content": text(step.message)})
            continue
        content = text(step.message)
        if reasoning == "think" and step.reasoning_content:
            content = f"<think>\n{text(step.reasoning_content)}\n</think>\n\n{content}"
        if native or not step.tool_calls:
            messages.append({"role": "assistant", "content": content})
            observation = _observation(step)
            if observation is not None:
                messages.append({"role": "user", "content": text(observation)})
            continue
        calls = []
        for call in step.tool_calls:
            calls.append({"id": call.tool_call_id, "type": "function",
                          "function": {"name": call.function_name, "arguments": _redact_args(call.arguments, text)}})
            tools.setdefault(call.function_name, TOOL_SCHEMAS.get(call.function_name, _generic_schema(call.function_name)))
        messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        results = {r.source_call_id: r.content for r in (step.observation.results if step.observation else [])}
        for call in step.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.tool_call_id, "name": call.function_name,
                             "content": text(results.get(call.tool_call_id) or "")})
    return Rendered(_merge_consecutive(messages), list(tools.values()), redactions)


def rendering_of(trajectory: Trajectory) -> str:
    """How the agent that made this trajectory renders ("text" or "tool_calls"), from the agent
    registry; trajectories of agents it does not know (other harnesses) render as tool calls."""
    from agentmill.agents.registry import UnknownAgentError, agent_class  # at call time: traces sit below agents

    try:
        return agent_class(trajectory.agent.name).rendering
    except UnknownAgentError:
        return "tool_calls"


def _observation(step: Step) -> str | None:
    if step.observation is None or not step.observation.results:
        return None
    return "\n".join(r.content or "" for r in step.observation.results)


def _redact_args(arguments: dict, text) -> dict:
    return {k: text(v) if isinstance(v, str) else v for k, v in (arguments or {}).items()}


def _generic_schema(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool.",
                                             "parameters": {"type": "object", "properties": {}}}}


def _merge_consecutive(messages: list[dict]) -> list[dict]:
    """Chat templates want user and assistant to alternate; join two user turns in a row."""
    out: list[dict] = []
    for m in messages:
        if out and m["role"] == "user" and out[-1]["role"] == "user":
            out[-1] = {**out[-1], "content": out[-1]["content"] + "\n\n" + m["content"]}
        else:
            out.append(m)
    return out


def arguments_json(arguments: dict) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
