"""The model client against a real local HTTP server with scripted replies."""

import asyncio
import socket
import time

import pytest

from agentmill.models import ContextExceededError, EndpointError, ModelClient, Prices, SamplingParams
from tests.helpers.chat_server import ChatServer, Reply, queue


def client(url, **kw):
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("max_retries", 3)
    return ModelClient(base_url=url, model="m", **kw)


def chat(c, **kw):
    async def go():
        try:
            return await c.chat([{"role": "user", "content": "hi"}], **kw)
        finally:
            await c.close()

    return asyncio.run(go())


def test_reply_usage_cost_and_sampling_sent():
    with ChatServer(queue(Reply("hello", usage=(1000, 500)))) as srv:
        c = client(
            srv.base_url,
            sampling=SamplingParams(temperature=0.2, top_p=0.9, max_tokens=77, seed=5),
            prices=Prices(input=1.0, output=2.0),
        )
        r = chat(c)
    assert r.content == "hello" and r.attempts == 1
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (1000, 500)
    assert r.cost_usd == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    sent = srv.requests[0]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"]) == (0.2, 0.9, 77, 5)


def test_reasoning_kept_apart():
    with ChatServer(queue(Reply("answer", reasoning="thinking hard"), Reply("<think>inline</think>done"))) as srv:
        r1 = chat(client(srv.base_url))
        r2 = chat(client(srv.base_url))
    assert (r1.content, r1.reasoning) == ("answer", "thinking hard")
    assert (r2.content, r2.reasoning) == ("done", "inline")


def test_429_honours_retry_after():
    with ChatServer(queue(Reply(status=429, headers={"Retry-After": "1"}), Reply("ok"))) as srv:
        c = client(srv.base_url)
        started = time.monotonic()
        r = chat(c)
    assert r.content == "ok" and r.attempts == 2
    assert time.monotonic() - started >= 0.95
    assert c.stats.retries == 1


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_retried(status):
    with ChatServer(queue(Reply(status=status), Reply(status=status), Reply("ok"))) as srv:
        r = chat(client(srv.base_url))
    assert r.content == "ok" and r.attempts == 3


def test_slow_reply_times_out_and_is_retried():
    with ChatServer(queue(Reply("late", delay=2.0), Reply("fast"))) as srv:
        r = chat(client(srv.base_url, timeout=0.5))
    assert r.content == "fast" and r.attempts == 2


def test_malformed_body_retried_then_fails():
    with ChatServer(queue(Reply(raw_body=b"this is not json"))) as srv:
        with pytest.raises(EndpointError, match="after 4 attempts"):
            chat(client(srv.base_url))
        assert len(srv.requests) == 4


def test_400_is_not_retried():
    with ChatServer(queue(Reply(status=400))) as srv:
        with pytest.raises(EndpointError, match="400"):
            chat(client(srv.base_url))
        assert len(srv.requests) == 1


def test_endpoint_down_ends_in_endpoint_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here
    with pytest.raises(EndpointError, match="Connection"):
        chat(client(f"http://127.0.0.1:{port}/v1"))


def test_json_schema_dialects_learnt_from_the_endpoint():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    # llama-cpp-python's server: rejects json_schema (with a 500), accepts json_object + schema
    rejects = Reply(status=500, raw_body=b'{"detail": "response_format.type: Input should be text or json_object"}')
    with ChatServer(queue(rejects, Reply('{"a": "x"}'))) as srv:
        c = client(srv.base_url)
        r = chat(c, json_schema=schema)
    assert r.content == '{"a": "x"}' and r.attempts == 1
    assert srv.requests[0]["response_format"]["json_schema"]["schema"] == schema
    assert srv.requests[1]["response_format"] == {"type": "json_object", "schema": schema}
    assert c.json_mode == "json_object"


def test_json_constraint_dropped_when_unsupported():
    schema = {"type": "object"}
    no = Reply(status=400, raw_body=b'{"error": {"message": "response_format is not supported"}}')
    with ChatServer(queue(no, no, Reply("{}"))) as srv:
        c = client(srv.base_url)
        r = chat(c, json_schema=schema)
    assert r.content == "{}" and "response_format" not in srv.requests[2]
    assert c.json_mode is None


def test_concurrent_requests_learn_the_dialect_once():
    def policy(request):
        if request.get("response_format", {}).get("type") == "json_schema":
            return Reply(status=500, raw_body=b'{"detail": "response_format: json_schema unsupported"}', delay=0.2)
        return Reply('{"a": "ok"}')

    async def go(url):
        c = client(url)
        try:
            return c, await asyncio.gather(
                *(c.chat([{"role": "user", "content": str(i)}], json_schema={"type": "object"}) for i in range(4))
            )
        finally:
            await c.close()

    with ChatServer(policy) as srv:
        c, replies = asyncio.run(go(srv.base_url))
    assert c.json_mode == "json_object"
    assert all(r.content == '{"a": "ok"}' for r in replies)


@pytest.mark.parametrize(
    "status, body",
    [
        (
            400,
            b'{"error": {"message": "This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens '
            b'(4000 in the messages, 1000 in the completion).", "type": "BadRequestError", "code": 400}}',
        ),  # vLLM
        (
            400,
            b'{"error": {"message": "Requested tokens exceed context limit", "code": "context_length_exceeded"}}',
        ),  # OpenAI
        (
            400,
            b'{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", '
            b'"type": "exceed_context_size_error"}}',
        ),  # llama.cpp server
        (400, b'{"detail": "Requested tokens (9000) exceed context window of 8192"}'),  # llama-cpp-python
        (
            400,
            b'{"object": "error", "message": "The input (9000 tokens) is longer than the model\'s context length (8192 tokens)."}',
        ),  # SGLang
        (500, b'{"error": "Context size has been exceeded."}'),  # a server that says it with a 500: not retried
    ],
)
def test_context_overflow_is_its_own_error_and_not_retried(status, body):
    with ChatServer(queue(Reply(status=status, raw_body=body))) as srv:
        c = client(srv.base_url)
        with pytest.raises(ContextExceededError, match="context is full"):
            chat(c, json_schema={"type": "object"})
        assert len(srv.requests) == 1


def test_other_400s_stay_endpoint_errors():
    with ChatServer(queue(Reply(status=400, error="messages[2].content: invalid type"))) as srv:
        with pytest.raises(EndpointError) as e:
            chat(client(srv.base_url))
    assert not isinstance(e.value, ContextExceededError)


def test_tools_sent_and_tool_calls_parsed():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get",
                "description": "Get one.",
                "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
            },
        }
    ]
    calls = [
        {"id": "c1", "name": "get", "arguments": {"id": "INC1"}},
        {"id": "c2", "name": "get", "arguments": '{"id": '},
    ]
    with ChatServer(queue(Reply(None, tool_calls=calls))) as srv:
        r = chat(client(srv.base_url), tools=tools)
    assert srv.requests[0]["tools"] == tools
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [
        ("c1", "get", '{"id": "INC1"}'),
        ("c2", "get", '{"id": '),
    ]
    assert r.content == "" and r.finish_reason == "tool_calls"
    with ChatServer(queue(Reply("plain"))) as srv:
        r = chat(client(srv.base_url))
    assert "tools" not in srv.requests[0] and r.tool_calls == []


def test_a_lone_surrogate_from_a_careless_caller_never_breaks_the_request():
    with ChatServer(queue(Reply("ok"))) as srv:
        c = client(srv.base_url)

        async def go():
            try:
                return await c.chat([{"role": "user", "content": "half \ud83d of an emoji"}])
            finally:
                await c.close()

        r = asyncio.run(go())
    assert r.content == "ok" and srv.requests[0]["messages"][0]["content"] == "half \ufffd of an emoji"


def test_retries_are_logged_when_asked(capfd):
    """`agentmill -v` (logs.configure(1)) shows each retry and its cause on stderr; quiet by default."""
    import logging

    from agentmill.logs import configure

    with ChatServer(queue(Reply(status=503), Reply(), Reply(status=503), Reply())) as srv:
        chat(client(srv.base_url))
        assert "retry" not in capfd.readouterr().err  # warnings only by default
        configure(1)
        try:
            chat(client(srv.base_url))
        finally:
            logging.getLogger("agentmill").setLevel(logging.WARNING)
    err = capfd.readouterr().err
    assert "HTTP 503" in err or "503" in err, err
    assert "retry 1 of" in err and "agentmill.models.client" in err


def test_open_model_without_base_url_names_the_field():
    """An endpoint's model opened without its address: one clear error (it was an AttributeError from
    deep in the client, 'NoneType' object has no attribute 'rstrip')."""
    from agentmill.errors import AgentmillError
    from agentmill.models.session import open_model

    async def go():
        async with open_model("some-model"):
            pass

    with pytest.raises(AgentmillError, match="model 'some-model' needs base_url"):
        asyncio.run(go())
