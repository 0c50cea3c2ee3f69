"""The policy stands where the model endpoint stands.

A trainer produces the model's turns; agentmill's own agents (terminus for terminal tasks, tools
for tool tasks) consume them through `PolicyClient`, which has the model client's `chat` interface.
So the policy's actions run exactly as a teacher's would: terminus types the reply's keystrokes
into the sandbox's tmux, the tools agent calls the task's sandboxed tools. When the policy has no
further turn the client raises `PolicyExhaustedError`, which ends the episode (then it is verified).

Completions arrive as trainers hand them over: a string (verl's decoded response, TRL's standard
format), an assistant message or a list of messages (TRL's conversational format). Tool calls are
read from OpenAI-style `tool_calls`, or from `<tool_call>{...}</tool_call>` blocks in the text
(the Hermes/Qwen chat-template convention) when the message has none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.models.client import ChatReply, ClientStats, SamplingParams, ToolCallRequest, Usage
from agentmill.models.reasoning import split_reasoning

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


class PolicyExhaustedError(AgentmillError):
    """The policy has no further turn: the episode ends here (not an agent failure)."""


PolicyExhausted = PolicyExhaustedError  # the name agentmill.rl exported first: scripts may import it


@dataclass
class PolicyTurn:
    """One model turn: the text (reasoning removed) and the tool calls it makes."""

    content: str
    reasoning: str | None = None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)


def turns_from_completion(completion: Any) -> list[PolicyTurn]:
    """Every assistant turn in a completion (a string, a message, or a list of messages)."""
    if isinstance(completion, str):
        return [turn_from_message({"role": "assistant", "content": completion})]
    if isinstance(completion, dict):
        return [turn_from_message(completion)]
    if isinstance(completion, (list, tuple)):
        return [
            turn_from_message(m)
            for m in completion
            if isinstance(m, dict) and m.get("role", "assistant") == "assistant"
        ]
    raise TypeError(f"a completion must be a string, a message or a list of messages, got {type(completion).__name__}")


def turn_from_message(message: dict[str, Any]) -> PolicyTurn:
    raw = message.get("content") or ""
    if isinstance(raw, list):  # content parts
        raw = "".join(p.get("text", "") for p in raw if isinstance(p, dict))
    content, reasoning = split_reasoning(str(raw), message.get("reasoning_content"))
    calls = [_call(c, i) for i, c in enumerate(message.get("tool_calls") or [])]
    if not calls:  # calls written in the text by the chat template's convention
        calls = [c for i, block in enumerate(_TOOL_CALL_BLOCK.findall(content)) if (c := _text_call(block, i))]
        if calls:
            content = _TOOL_CALL_BLOCK.sub("", content).strip()
    return PolicyTurn(content=content, reasoning=reasoning, tool_calls=calls)


def _call(call: dict[str, Any], i: int) -> ToolCallRequest:
    fn = call.get("function") or call
    arguments = fn.get("arguments", {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCallRequest(
        id=str(call.get("id") or f"policy_call_{i + 1}"), name=str(fn.get("name", "")), arguments=text
    )


def _text_call(block: str, i: int) -> ToolCallRequest | None:
    try:
        obj = json.loads(block)
    except ValueError:
        return ToolCallRequest(id=f"policy_call_{i + 1}", name="", arguments=block)  # the agent reports the bad call
    return _call(obj, i) if isinstance(obj, dict) else None


Source = Callable[[list[dict[str, Any]]], Awaitable[PolicyTurn | None]]


class PolicyClient:
    """The model client's interface, answered by the policy. `source(messages)` is asked for each
    turn with the conversation the agent would send; None means the policy is done."""

    def __init__(self, source: Source, *, model: str = "policy"):
        self.source = source
        self.model = model
        self.base_url = "policy://"
        self.sampling = SamplingParams()
        self.stats = ClientStats()

    async def chat(
        self, messages: list[dict[str, Any]], *, json_schema: dict | None = None, tools: list[dict] | None = None
    ) -> ChatReply:
        turn = await self.source(messages)
        if turn is None:
            raise PolicyExhaustedError()
        self.stats.requests += 1
        return ChatReply(
            content=turn.content,
            reasoning=turn.reasoning,
            usage=Usage(),
            cost_usd=None,
            finish_reason="tool_calls" if turn.tool_calls else "stop",
            latency=0.0,
            attempts=1,
            raw_content=turn.content,
            tool_calls=list(turn.tool_calls),
        )

    async def close(self) -> None:
        return None


def scripted(turns: list[PolicyTurn]) -> Source:
    """A source that plays the given turns in order, then ends the episode."""
    pending = list(turns)

    async def source(_messages: list[dict[str, Any]]) -> PolicyTurn | None:
        return pending.pop(0) if pending else None

    return source
