"""Render a trajectory as the chat the model had: OpenAI-style messages, for every SFT format.

For agentmill's agents the trajectory stores every message exactly as it was sent
(agents/conversation.py), so rendering is a verbatim walk over the steps:

- `system` / `user` steps: the message as sent;
- `agent` steps: the reply as it was sent back in later requests; with `reasoning="think"`, reasoning
  is put before it as `<think>\\n...\\n</think>\\n\\n` (Qwen3 style); `"drop"` leaves it out. Requests
  never carry earlier reasoning, so with "drop" every message equals what the endpoint received;
- text-protocol agents (terminus: `rendering = "text"`, from the agent registry) are followed by
  their observation as the next user message, verbatim (wrapper included);
- tool-calling agents: an assistant message with `tool_calls` (arguments as the JSON text sent),
  then one `role: tool` message per call; `tools` is the list of tools sent with the requests.

After a context handoff (traces/handoff.py) the row is the last conversation only: the steps from
the last handoff on, which is what the model received in its last requests.

A row ends on the model's turn: messages after the last reply (an observation the agent produced
but never sent, e.g. when max turns ran out) are not part of the conversation the model had.
Text is cleaned and redacted once more on the way out (idempotent on what agents stored, and a
safety net for trajectories written elsewhere).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from agentmill.traces.atif import Step, Trajectory
from agentmill.traces.handoff import current_conversation
from agentmill.traces.redact import scrub, scrubbed_as_is

Reasoning = Literal["think", "drop"]

# trajectories of other harnesses' agents that call tools name no tool list: describe what they used
TOOL_SCHEMAS = {
    "bash": {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
}


class Rendered:
    """messages + tools, and how many secrets were redacted on the way."""

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict], redactions: int):
        self.messages, self.tools, self.redactions = messages, tools, redactions


def render(trajectory: Trajectory, *, reasoning: Reasoning = "think") -> Rendered:
    text_protocol = rendering_of(trajectory) == "text"
    messages: list[dict[str, Any]] = []
    used_tools: dict[str, dict] = {}
    redactions = 0
    as_is = scrubbed_as_is(
        _texts(trajectory, text_protocol)
    )  # almost always: then each text is kept without a pass of its own

    def text(value: str | None) -> str:
        nonlocal redactions
        if as_is:
            return value or ""
        cleaned, n = scrub(value)
        redactions += n
        return cleaned

    for step in current_conversation(trajectory.steps):  # the model never saw steps before a handoff with those after
        if step.source in ("system", "user"):
            messages.append({"role": step.source, "content": text(step.message)})
            continue
        content = with_reasoning(text(step.message), text(step.reasoning_content), reasoning)
        if text_protocol or not step.tool_calls:
            messages.append({"role": "assistant", "content": content})
            observation = _observation(step)
            if observation is not None:
                messages.append({"role": "user", "content": text(observation)})
            continue
        calls = []
        for call in step.tool_calls:
            calls.append(
                {
                    "id": call.tool_call_id,
                    "type": "function",
                    "function": {"name": call.function_name, "arguments": text(arguments_text(call))},
                }
            )
            used_tools.setdefault(
                call.function_name, TOOL_SCHEMAS.get(call.function_name, _generic_schema(call.function_name))
            )
        messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        results = {r.source_call_id: r.content for r in (step.observation.results if step.observation else [])}
        for call in step.tool_calls:
            if call.tool_call_id in results:
                messages.append(
                    {"role": "tool", "tool_call_id": call.tool_call_id, "content": text(results[call.tool_call_id])}
                )
    tools = sent_tools(trajectory)
    return Rendered(_end_on_reply(messages), tools if tools is not None else list(used_tools.values()), redactions)


def with_reasoning(content: str, reasoning: str | None, mode: Reasoning) -> str:
    if mode == "think" and reasoning:
        return f"<think>\n{reasoning}\n</think>\n\n{content}"
    return content


def arguments_text(call) -> str:
    """A call's arguments as the JSON text the model was sent back (agentmill agents record it)."""
    recorded = (call.extra or {}).get("arguments_text")
    return recorded if isinstance(recorded, str) else json.dumps(call.arguments or {}, ensure_ascii=False)


def sent_tools(trajectory: Trajectory) -> list[dict] | None:
    """The tool list sent with every request, recorded on the first step; None if none was recorded."""
    for step in trajectory.steps[:1]:
        tools = (step.extra or {}).get("tools")
        if isinstance(tools, list):
            return tools
    return None


# Harbor's agents that speak in the reply text (JSON keystrokes) and see the terminal as the next
# user turn, as agentmill's terminus does: their trajectories render as that conversation. Kept here,
# with the rendering it decides (interop/harbor/ sits above traces and reads it from here).
HARBOR_TEXT_AGENTS = frozenset({"terminus", "terminus-1", "terminus-2"})


def rendering_of(trajectory: Trajectory) -> str:
    """How the agent that made this trajectory renders ("text" or "tool_calls"), from the agent
    registry; trajectories of agents it does not know (other harnesses) render as tool calls."""
    from agentmill.agents.registry import UnknownAgentError, agent_class  # at call time: traces sit below agents

    try:
        return agent_class(trajectory.agent.name).rendering
    except UnknownAgentError:
        return "text" if trajectory.agent.name in HARBOR_TEXT_AGENTS else "tool_calls"


def _texts(trajectory: Trajectory, text_protocol: bool) -> list[str]:
    """Every text `render` scrubs, in the same walk (the observations it scrubs are newline-joins of these)."""
    out: list[str] = []
    for step in trajectory.steps:
        out.append(step.message)
        if step.source in ("system", "user"):
            continue
        if step.reasoning_content:
            out.append(step.reasoning_content)
        if not text_protocol:
            out.extend(arguments_text(call) for call in step.tool_calls or ())
        out.extend(r.content for r in (step.observation.results if step.observation else ()) if r.content)
    return out


def _observation(step: Step) -> str | None:
    if step.observation is None or not step.observation.results:
        return None
    return "\n".join(r.content or "" for r in step.observation.results)


def _generic_schema(name: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {}},
        },
    }


def _end_on_reply(messages: list[dict]) -> list[dict]:
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    return messages[: last + 1] if last >= 0 else messages
