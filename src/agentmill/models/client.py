"""One client for every OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp server, OpenAI).

A JSON POST over httpx: the body is serialised once per attempt from the messages as given (the
openai SDK's per-message request transform cost ~0.4 ms per message, so a trial's client time grew
with the square of its turns). The body is the one the SDK sent: the same keys in the same order,
compact UTF-8 JSON. We retry 429, 5xx, timeouts and connection failures ourselves with exponential
backoff and jitter, honour Retry-After, and count every attempt, so a run can report what the
endpoint did.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from agentmill import defaults
from agentmill.errors import AgentmillError
from agentmill.models.reasoning import split_reasoning

log = logging.getLogger(__name__)


class SamplingParams(BaseModel):
    """Part of a trial's identity: change one and it is a different trial."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(defaults.TEMPERATURE, ge=0)
    top_p: float = Field(defaults.TOP_P, gt=0, le=1)
    max_tokens: int = Field(defaults.MAX_TOKENS, gt=0)
    seed: int | None = None


class Prices(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None


class EndpointError(AgentmillError):
    """The endpoint failed after every retry (down, refusing, or answering garbage)."""


class MissingKeyError(EndpointError):
    """The key's environment variable is not set: the endpoint cannot be used (never the input's fault)."""


class ContextExceededError(AgentmillError):
    """The conversation no longer fits the model: the endpoint said so, or --max-context was reached.
    The agent's own limit, not the infrastructure's: the trial ends as `context_exceeded`."""


# How servers say the prompt is too long: OpenAI (code context_length_exceeded, "maximum context
# length"), vLLM ("maximum context length"), SGLang ("longer than the model's context length"),
# llama.cpp ("exceeds the available context size"), llama-cpp-python ("exceed context window"),
# TGI ("`inputs` tokens + `max_new_tokens` must be <="), others ("prompt is too long").
CONTEXT_EXCEEDED = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|exceeds? (?:the )?(?:available )?context (?:size|window|length)"
    r"|context (?:size|window|length) (?:has been |was |is )?exceeded|longer than the model'?s (?:maximum )?context length"
    r"|prompt is too long|`inputs` tokens \+ `max_new_tokens` must be",
    re.IGNORECASE,
)


@dataclass
class ToolCallRequest:
    """One function call the model asked for. `arguments` is the JSON text exactly as the model wrote it."""

    id: str
    name: str
    arguments: str


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.reasoning_tokens += other.reasoning_tokens


@dataclass
class ChatReply:
    content: str
    reasoning: str | None
    usage: Usage
    cost_usd: float | None
    finish_reason: str | None
    latency: float
    attempts: int
    raw_content: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)


@dataclass
class ClientStats:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0


RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class ModelClient:
    # Each request is answered from what it carries alone (an HTTP endpoint keeps no state between
    # requests), so one may be sent ahead and thrown away unseen (agents/conversation.py, Ahead).
    # A client whose answers depend on the requests before (rl/policy.py) must not say so.
    independent_requests = True

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        sampling: SamplingParams | None = None,
        timeout: float = 600.0,
        max_retries: int = 6,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        max_concurrency: int = 64,
        prices: Prices | None = None,
        extra_body: dict[str, Any] | None = None,
    ):
        self.model = model
        self.base_url = base_url
        self.sampling = sampling or SamplingParams()
        self.max_retries = max_retries
        self.backoff_base, self.backoff_max = backoff_base, backoff_max
        self.prices = prices
        self.extra_body = extra_body or {}
        self.stats = ClientStats()
        self._gate = asyncio.Semaphore(max_concurrency)
        self._url = base_url.rstrip("/") + "/chat/completions"
        # Several connection pools, requests spread over them in turn: a pool checks every connection
        # it holds on each request (a socket poll per idle one), so with hundreds of requests in
        # flight one pool would cost O(connections) per request on the event loop. One TLS context
        # (httpx's default trust) serves them all: building one costs ~25 ms.
        tls = httpx.create_ssl_context()
        self._pools = [
            httpx.AsyncClient(
                headers={
                    "Authorization": f"Bearer {api_key or 'not-needed'}",
                    "Content-Type": "application/json",
                    "Accept": "application/json",
                    "User-Agent": "agentmill",
                },
                timeout=httpx.Timeout(timeout),
                follow_redirects=True,
                verify=tls,
                limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
            )
            for _ in range(max(1, min(16, max_concurrency // 16)))
        ]
        self._turn = itertools.count()
        # How to ask for schema-constrained JSON, learnt on first use: OpenAI/vLLM/SGLang take
        # `json_schema`, llama-cpp-python's server takes `json_object` with a `schema`, some none.
        self._format_modes: list[str | None] = ["json_schema", "json_object", None]

    @property
    def json_mode(self) -> str | None:
        return self._format_modes[0]

    @classmethod
    def from_env(
        cls, *, base_url: str, model: str, api_key_env: str | None = None, key_hint: str = "--api-key-env", **kw
    ) -> ModelClient:
        """`key_hint`: where the caller's user named the variable (a flag, or a config file's field)."""
        key = os.environ.get(api_key_env) if api_key_env else None
        if api_key_env and key is None:
            raise MissingKeyError(f"{key_hint}: environment variable {api_key_env} is not set")
        return cls(base_url=base_url, model=model, api_key=key, **kw)

    async def close(self) -> None:
        for pool in self._pools:
            await pool.aclose()

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict | None = None,
        tools: list[dict] | None = None,
        seed: int | None = None,
    ) -> ChatReply:
        """One completion, retried on transient failures. Raises EndpointError when retries run out,
        ContextExceededError when the endpoint says the conversation is too long for the model.

        `tools`: OpenAI function schemas; the reply's `tool_calls` holds the calls the model made.
        `seed`: this request's sampling seed (models/seeding.py derives one per request), else the run's."""
        # keys in the order the openai SDK sent them
        body: dict[str, Any] = {
            "model": self.model,
            "messages": _encodable(messages),
            "max_tokens": self.sampling.max_tokens,
            "response_format": None,
        }
        seed = self.sampling.seed if seed is None else seed
        if seed is not None:
            body["seed"] = seed
        body["temperature"] = self.sampling.temperature
        if tools:
            body["tools"] = tools
        body["top_p"] = self.sampling.top_p
        attempt = 0
        async with self._gate:
            while True:
                attempt += 1
                mode = self.json_mode if json_schema is not None else None
                started = time.monotonic()
                self.stats.requests += 1
                try:
                    fmt = response_format(mode, json_schema) if mode is not None and json_schema is not None else None
                    pool = self._pools[next(self._turn) % len(self._pools)]
                    resp = await pool.post(self._url, content=_request_bytes(body, self.extra_body, fmt))
                    if not resp.is_success:
                        raise StatusError(resp)
                    return self._reply(resp.json(), time.monotonic() - started, attempt)
                except StatusError as e:
                    if CONTEXT_EXCEEDED.search(_body(e)):
                        self.stats.failures += 1
                        raise ContextExceededError(f"the model's context is full: {_brief(e)}") from None
                    if mode is not None and _mentions_format(e):
                        # This endpoint speaks another dialect, or none. Concurrent requests learn
                        # the same lesson at once: only the first drops the mode.
                        if self._format_modes[0] == mode:
                            self._format_modes.pop(0)
                        attempt -= 1
                        continue
                    if e.status_code == 400:
                        self.stats.failures += 1
                        raise EndpointError(f"{self.base_url}: request rejected (400): {_brief(e)}") from None
                    retryable = e.status_code in RETRYABLE_STATUS
                    delay = _retry_after(e) if retryable else None
                    error = f"HTTP {e.status_code}: {_brief(e)}"
                except httpx.TimeoutException:
                    retryable, delay, error = True, None, "TimeoutError"
                except httpx.TransportError:
                    retryable, delay, error = True, None, "ConnectionError"
                except (
                    ValueError,
                    KeyError,
                    TypeError,
                    AttributeError,
                    IndexError,
                ) as e:  # a body that is not a completion
                    retryable, delay, error = True, None, f"malformed response: {e}"
                if not retryable or attempt > self.max_retries:
                    self.stats.failures += 1
                    raise EndpointError(f"{self.base_url}: {error} (after {attempt} attempts)")
                self.stats.retries += 1
                if delay is None:
                    delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
                log.info("%s: %s; retry %d of %d in %.1fs", self.base_url, error, attempt, self.max_retries, delay)
                await asyncio.sleep(min(delay, self.backoff_max))

    def _reply(self, resp: dict[str, Any], latency: float, attempts: int) -> ChatReply:
        choice = resp["choices"][0]
        msg = choice["message"]
        reasoning_field = msg.get("reasoning_content") or msg.get("reasoning")
        raw = msg.get("content") or ""
        if not isinstance(raw, str) or not (reasoning_field is None or isinstance(reasoning_field, str)):
            raise TypeError("message content and reasoning must be text")
        content, reasoning = split_reasoning(raw, reasoning_field)
        usage = Usage()
        reported = resp.get("usage")
        if reported is not None:
            usage.prompt_tokens = reported.get("prompt_tokens") or 0
            usage.completion_tokens = reported.get("completion_tokens") or 0
            usage.cached_tokens = (reported.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            usage.reasoning_tokens = (reported.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        calls = [
            ToolCallRequest(
                id=c.get("id") or "",
                name=c["function"].get("name") or "",
                arguments=c["function"].get("arguments") or "",
            )
            for c in (msg.get("tool_calls") or [])
            if c.get("function") is not None
        ]
        cost = self.cost(usage)
        self.stats.usage.add(usage)
        if cost is not None:
            self.stats.cost_usd += cost
        return ChatReply(
            content=content,
            reasoning=reasoning,
            usage=usage,
            cost_usd=cost,
            finish_reason=choice.get("finish_reason"),
            latency=latency,
            attempts=attempts,
            raw_content=raw,
            tool_calls=calls,
        )

    def cost(self, usage: Usage) -> float | None:
        if self.prices is None:
            return None
        p = self.prices
        cached_price = p.cached_input if p.cached_input is not None else p.input
        fresh = usage.prompt_tokens - usage.cached_tokens
        return (fresh * p.input + usage.cached_tokens * cached_price + usage.completion_tokens * p.output) / 1e6


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(value: Any) -> Any:
    """A safety net for callers that did not clean their text: a lone surrogate cannot be encoded
    into a request body at all (every retry would fail), so it becomes U+FFFD. Agents scrub their
    messages before this point (agents/conversation.py), so for them this changes nothing."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    if isinstance(value, dict):
        return {k: _encodable(v) for k, v in value.items()}
    return value


def response_format(mode: str, schema: dict) -> dict:
    """The `response_format` of a JSON dialect: "json_schema" (OpenAI, vLLM, SGLang) or "json_object" with
    a `schema` (llama-cpp-python's server)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}
    return {"type": "json_object", "schema": schema}


class StatusError(EndpointError):
    """A non-2xx answer; its text reads as the openai SDK's did ("Error code: N - body"). chat() retries
    it or raises an EndpointError (or ContextExceededError) of its own: it never leaves this module."""

    def __init__(self, response: httpx.Response):
        self.status_code, self.response = response.status_code, response
        text = response.text.strip()
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        super().__init__(f"Error code: {response.status_code} - {body}")


def _request_bytes(body: dict[str, Any], extra: dict[str, Any], response_format: dict | None) -> bytes:
    """The request body as the openai SDK serialised it: compact UTF-8 JSON, no NaN; `response_format`
    in its place only when asked for; extra_body merged last (its keys win, new ones go at the end)."""
    sent = dict(body)
    if response_format is None:
        del sent["response_format"]
    else:
        sent["response_format"] = response_format
    if extra:
        sent = {**sent, **extra}
    return json.dumps(sent, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _retry_after(e: StatusError) -> float | None:
    try:
        value = e.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (ValueError, AttributeError):
        return None


def _brief(e: Exception) -> str:
    return str(e).replace("\n", " ")[:300]


def _body(e: StatusError) -> str:
    return f"{e} {e.response.text}"


def _mentions_format(e: StatusError) -> bool:
    return mentions_format(_body(e))


def mentions_format(body: str) -> bool:
    """Whether an error body is about the request's response_format (a JSON dialect the endpoint lacks)."""
    text = body.lower()
    return "response_format" in text or "json_schema" in text or "grammar" in text
