"""The client sends prebuilt JSON over httpx instead of going through the openai SDK: the bytes an
endpoint receives must be exactly those the SDK sent for the same call (keys, order, separators,
non-ASCII text), so switching changed nothing a server, a cache or a recorded request can see."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from openai import AsyncOpenAI

from agentmill.models import ModelClient, SamplingParams
from agentmill.models.client import _encodable, response_format

COMPLETION = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()


class RawRecorder:
    """A real HTTP server that keeps every request body's bytes and answers one completion."""

    def __init__(self):
        self.bodies: list[bytes] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                recorder.bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(COMPLETION)))
                self.end_headers()
                self.wfile.write(COMPLETION)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


MESSAGES = [
    {"role": "system", "content": 'You drive a terminal. Ünïcödé, 日本語, emoji 🚀, "quotes" and \\ slashes'},
    {"role": "user", "content": "half \ud83d of an emoji\n\ttab"},
    {"role": "assistant", "content": '{"analysis": "a", "commands": [{"keystrokes": "ls\\n", "duration": 0.1}]}'},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": '{"id": 1}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "result"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get",
            "description": "Get one.",
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
        },
    }
]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


async def _sdk_call(url: str, model: str, sampling: SamplingParams, *, tools=None, mode=None, extra_body=None):
    """What agentmill's client did through the SDK before (the same kwargs, in the same way)."""
    sdk = AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0)
    kwargs = dict(
        model=model,
        messages=_encodable(MESSAGES),
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
    )
    if tools:
        kwargs["tools"] = tools
    if sampling.seed is not None:
        kwargs["seed"] = sampling.seed
    if extra_body:
        kwargs["extra_body"] = extra_body
    if mode is not None:
        kwargs["response_format"] = response_format(mode, SCHEMA)
    try:
        await sdk.chat.completions.create(**kwargs)
    finally:
        await sdk.close()


async def _our_call(url: str, model: str, sampling: SamplingParams, *, tools=None, mode=None, extra_body=None):
    client = ModelClient(base_url=url, model=model, sampling=sampling, extra_body=extra_body)
    if mode is not None:
        while client.json_mode != mode:
            client._format_modes.pop(0)
    try:
        await client.chat(MESSAGES, tools=tools, json_schema=SCHEMA if mode is not None else None)
    finally:
        await client.close()


CASES = {
    "plain": dict(),
    "seed_and_tools": dict(sampling=SamplingParams(temperature=0.7, top_p=0.95, max_tokens=512, seed=42), tools=TOOLS),
    "json_schema": dict(mode="json_schema"),
    "json_object": dict(mode="json_object"),
    "extra_body": dict(
        extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}, "temperature": 0.1}
    ),
    "everything": dict(sampling=SamplingParams(seed=1), tools=TOOLS, mode="json_schema", extra_body={"min_p": 0.05}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_request_bytes_equal_the_sdks(case):
    kw = dict(CASES[case])
    sampling = kw.pop("sampling", SamplingParams())
    rec = RawRecorder()
    try:
        asyncio.run(_sdk_call(rec.url, "teacher-model", sampling, **kw))
        asyncio.run(_our_call(rec.url, "teacher-model", sampling, **kw))
    finally:
        rec.close()
    sdk_body, our_body = rec.bodies
    assert our_body == sdk_body
    assert json.loads(our_body)["messages"][1]["content"] == "half \ufffd of an emoji\n\ttab"


def test_the_comparison_sees_a_changed_body(monkeypatch):
    # the check above can fail: a client that serialised with sorted keys and spaces is caught
    from agentmill.models import client as client_mod

    def sorted_spaced(body, extra, response_format):
        sent = {**{k: v for k, v in body.items() if k != "response_format"}, **extra}
        return json.dumps(sent, sort_keys=True, ensure_ascii=False).encode()

    monkeypatch.setattr(client_mod, "_request_bytes", sorted_spaced)
    rec = RawRecorder()
    try:
        asyncio.run(_sdk_call(rec.url, "m", SamplingParams()))
        asyncio.run(_our_call(rec.url, "m", SamplingParams()))
    finally:
        rec.close()
    assert rec.bodies[0] != rec.bodies[1] and json.loads(rec.bodies[0]) == json.loads(rec.bodies[1])
