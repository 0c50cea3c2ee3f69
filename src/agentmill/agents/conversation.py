"""The conversation a model-driven agent has, kept in lockstep with its trajectory.

Every text is scrubbed once (cleaned: no control characters, escape sequences or lone surrogates;
secrets redacted), then the *same string* is sent to the model and stored in the trajectory. The
stored steps therefore render back to exactly the messages the model received (traces/render.py):

- a system or user message is a `system` / `user` step whose `message` is the text sent;
- a reply is an `agent` step: `message` is the answer as it is sent back in later requests
  (reasoning is kept apart in `reasoning_content` and is never sent back), `tool_calls` the calls;
- what the model is told next is the step's `observation`: for text-protocol agents one result,
  the next user message verbatim (wrapper included); for tool-calling agents one result per call,
  each the `role: tool` message's content verbatim.

Before each request the conversation checks `max_context` (tokens): the endpoint's own count of
the previous request and reply, plus an estimate of what was added since. An agent may hand off to
a fresh conversation (`restart`, agents/terminus/handoff.py): the steps then go on in the same
trajectory, and the step that begins the new conversation says so (traces/render.py renders from it).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, cast

from agentmill.agents.base import AgentResult
from agentmill.models.client import ChatReply, ContextExceededError, ModelClient
from agentmill.traces.atif import Metrics, Observation, ObservationResult, Step, ToolCall
from agentmill.traces.redact import scrub
from agentmill.traces.text import clean_text
from agentmill.traces.tokens import CHARS_PER_TOKEN, TokenCounter


@dataclass
class Call:
    """A tool call to execute: the model's real arguments (only cleaned), and the step's record of it."""

    id: str
    name: str
    arguments_text: str
    record: ToolCall


@dataclass
class Turn:
    reply: ChatReply
    step: Step
    calls: list[Call]


class Conversation:
    def __init__(
        self,
        client: ModelClient,
        result: AgentResult,
        stats: dict[str, Any],
        *,
        max_context: int | None = None,
        tools: list[dict] | None = None,
    ):
        self.client, self.result, self.stats = client, result, stats
        self.max_context = max_context
        self.tools = tools or None
        self.messages: list[dict[str, Any]] = []
        self.stats.setdefault("redactions", 0)
        self._counted = 0  # messages covered by the endpoint's last token count
        self._counted_tokens = 0
        self._estimate = TokenCounter()

    def scrub(self, text: str | None) -> str:
        out, n = scrub(text)
        self.stats["redactions"] += n
        return out

    def say(self, role: str, text: str, *, extra: dict | None = None) -> str:
        """Add a system or user message; returns the text as sent."""
        text = self.scrub(text)
        if not self.messages and self.tools:  # the tools offered with every request, recorded once
            extra = {**(extra or {}), "tools": self.tools}
        self.messages.append({"role": role, "content": text})
        self.result.steps.append(Step(step_id=self.result.next_id(), source=role, message=text, extra=extra))
        return text

    async def ask(self, *, json_schema: dict | None = None) -> Turn:
        """Send the conversation; record and append the reply."""
        self._check_context(self.messages)
        reply = await self.client.chat(self.messages, json_schema=json_schema, tools=self.tools)
        return self._record(reply)

    def ask_ahead(self, role: str, text: str, *, json_schema: dict | None = None) -> Ahead:
        """Send the conversation plus one more message *before* that message is known to be right
        (a first turn asked while the sandbox still starts). Nothing is recorded: `Ahead.commit()`
        records the message and the reply exactly as `say` then `ask` would have, once the caller
        has checked the message; `Ahead.drop()` abandons the request as if it was never made."""
        sent, redactions = scrub(text)
        messages = [*self.messages, {"role": role, "content": sent}]
        self._check_context(messages)
        ahead = Ahead(self, role, sent, redactions)

        async def send() -> ChatReply:
            ahead.sent = True  # the client counts a request when it runs, not when it is scheduled
            return await self.client.chat(messages, json_schema=json_schema, tools=self.tools)

        ahead.request = asyncio.ensure_future(send())
        ahead.request.add_done_callback(_retrieve)
        return ahead

    def _record(self, reply: ChatReply) -> Turn:
        content = self.scrub(reply.content)
        step = Step(
            step_id=self.result.next_id(),
            source="agent",
            model_name=self.client.model,
            message=content,
            reasoning_content=self.scrub(reply.reasoning) or None,
            metrics=Metrics(
                prompt_tokens=reply.usage.prompt_tokens,
                completion_tokens=reply.usage.completion_tokens,
                cached_tokens=reply.usage.cached_tokens or None,
                cost_usd=reply.cost_usd,
                extra={
                    "latency_s": round(reply.latency, 3),
                    "attempts": reply.attempts,
                    "finish_reason": reply.finish_reason,
                },
            ),
        )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        calls = self._calls(reply, step)
        if calls:
            step.tool_calls = [c.record for c in calls]
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": cast(dict, c.record.extra)["arguments_text"]},
                }
                for c in calls
            ]
        self.result.steps.append(step)
        self.messages.append(message)
        if reply.usage.prompt_tokens:  # the endpoint's own count; reasoning is not sent back
            self._counted = len(self.messages)
            self._counted_tokens = (
                reply.usage.prompt_tokens + reply.usage.completion_tokens - reply.usage.reasoning_tokens
            )
        return Turn(reply, step, calls)

    def tell(self, step: Step, text: str, *, call_id: str | None = None) -> str:
        """Text protocol: the next user message, recorded as the step's observation."""
        text = self.scrub(text)
        step.observation = Observation(results=[ObservationResult(source_call_id=call_id, content=text)])
        self.messages.append({"role": "user", "content": text})
        return text

    def tool_result(self, step: Step, call_id: str, content: str) -> str:
        """Tool calling: one `role: tool` message, recorded as one result of the step's observation."""
        content = self.scrub(content)
        if step.observation is None:
            step.observation = Observation()
        step.observation.results.append(ObservationResult(source_call_id=call_id, content=content))
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return content

    def _calls(self, reply: ChatReply, step: Step) -> list[Call]:
        calls, seen = [], set()
        for i, c in enumerate(reply.tool_calls):
            call_id = self.scrub(c.id)
            if not call_id or call_id in seen:  # some servers send none, or repeat them
                call_id = f"call_{step.step_id}_{i + 1}"
            seen.add(call_id)
            real = clean_text(c.arguments)  # executed as written; only the record and the history are redacted
            sent = self.scrub(c.arguments)
            record = ToolCall(
                tool_call_id=call_id,
                function_name=self.scrub(c.name),
                arguments=_object(sent),
                extra={"arguments_text": sent},
            )
            calls.append(Call(call_id, record.function_name, real, record))
        return calls

    def needed_tokens(self, messages: list[dict[str, Any]] | None = None) -> int:
        """About how many tokens sending `messages` (default: the conversation) takes."""
        messages = self.messages if messages is None else messages
        added = messages[self._counted :]
        tokens = self._counted_tokens + (self._estimate.count(added) if added else 0)
        if not self._counted and self.tools:  # nothing counted by the endpoint yet: the tool list is in the prompt too
            tokens += int(len(json.dumps(self.tools)) / CHARS_PER_TOKEN)
        return tokens

    def fork(self, result: AgentResult, stats: dict[str, Any]) -> Conversation:
        """The same messages (and token count) recording into another result: a side request."""
        other = Conversation(self.client, result, stats, max_context=self.max_context, tools=self.tools)
        other.messages = list(self.messages)
        other._counted, other._counted_tokens = self._counted, self._counted_tokens
        return other

    def restart(self) -> None:
        """Begin a fresh conversation (a context handoff): the steps already recorded stay."""
        self.messages = []
        self._counted = self._counted_tokens = 0

    def _check_context(self, messages: list[dict[str, Any]]) -> None:
        if self.max_context is None:
            return
        tokens = self.needed_tokens(messages)
        if tokens > self.max_context:
            self.stats["context_tokens"] = tokens
            raise ContextExceededError(
                f"the next request needs about {tokens} tokens, over --max-context {self.max_context}"
            )


class Ahead:
    """A request sent ahead of its last message being confirmed (Conversation.ask_ahead)."""

    def __init__(self, chat: Conversation, role: str, text: str, redactions: int):
        self.chat, self.role, self.text = chat, role, text
        self._redactions = redactions
        self.request: asyncio.Future | None = None
        self.sent = False

    async def commit(self) -> Turn:
        """The message was right: record it and the reply, as `say` and `ask` would have."""
        self.chat.stats["redactions"] += self._redactions
        self.chat.messages.append({"role": self.role, "content": self.text})
        self.chat.result.steps.append(Step(step_id=self.chat.result.next_id(), source=self.role, message=self.text))
        assert self.request is not None  # ask_ahead sent it
        return self.chat._record(await self.request)

    def drop(self) -> None:
        """The message was wrong: the request is cancelled (or its reply thrown away) and the
        client's request count taken back, so the request that replaces it is sent as this one
        would have been (the same per-request seed, models/seeding.py)."""
        assert self.request is not None  # ask_ahead sent it
        self.request.cancel()
        take_back = getattr(self.chat.client, "take_back", None)
        if self.sent and take_back is not None:
            take_back()


def _retrieve(request: asyncio.Future) -> None:
    """A dropped request's failure is nobody's to raise: read it so asyncio does not log it."""
    if not request.cancelled():
        request.exception()


def _object(text: str) -> dict:
    """The arguments as an object for the trajectory record; text that is not a JSON object is kept raw."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
