"""A real local HTTP server that speaks the chat-completions API with scripted replies.

A test double for the test suite only: agentmill's client talks to it over real sockets, so
retries, timeouts, malformed bodies and Retry-After are exercised end to end. It records every
request it receives (`requests`) and, beside each, the assistant message it answered with
(`exchanges`: what crossed the wire, for the exact-rows tests). Replies may carry tool calls.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = ""
    reasoning: str | None = None
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None  # sent as-is instead of a completion
    usage: tuple[int, int] = (10, 5)
    finish_reason: str | None = None  # default: "tool_calls" when there are tool calls, else "stop"
    # [{"id": ..., "name": ..., "arguments": str | dict}]; a dict is sent as its JSON text
    tool_calls: list[dict[str, Any]] | None = None
    error: str | None = None  # the error message of a non-200 reply
    error_code: str | None = None


@dataclass
class Exchange:
    request: dict[str, Any]
    status: int
    message: dict[str, Any] | None  # the assistant message sent back (None unless status 200)


Policy = Callable[[dict[str, Any]], Reply]


def queue(*replies: Reply) -> Policy:
    """Replies in order; the last one repeats."""
    items = list(replies)
    lock = threading.Lock()

    def policy(_request):
        with lock:
            return items.pop(0) if len(items) > 1 else items[0]

    return policy


def probe_answer(body: dict[str, Any]) -> Reply:
    """A served model's answer to a preflight request: the JSON object a probe asks for in JSON mode."""
    wants_json = "response_format" in body or "JSON" in str(body.get("messages"))
    return Reply(content='{"ok": true}' if wants_json else "ok")


class ChatServer:
    """`port`: bind this port (a test that starts the server late, after a command found it down).
    Preflight requests (`X-Agentmill-Preflight`) are answered with `probe_reply` and recorded in
    `probes`, apart from the script: a real server answers them as any request, and the script's
    replies stay for the work they were written for. Unless `probe_reply` is set, a probe is
    answered as a served model in JSON mode would: the JSON object it asks for, else "ok"."""

    def __init__(self, policy: Policy, model: str = "scripted", port: int = 0, sock: socket.socket | None = None):
        self.policy, self.model = policy, model
        self.probe_reply: Reply | None = None
        self.probes: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []  # each request's headers, beside `requests`
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                self._send(
                    200, json.dumps({"object": "list", "data": [{"id": server.model, "object": "model"}]}).encode()
                )

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                probe = self.headers.get("x-agentmill-preflight") is not None
                with server._lock:
                    (server.probes if probe else server.requests).append(body)
                    if not probe:
                        server.request_headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = (server.probe_reply or probe_answer(body)) if probe else server.policy(body)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw_body is not None:
                    server._record(probe, body, reply.status, None)
                    return self._send(reply.status, reply.raw_body, reply.headers)
                if reply.status != 200:
                    server._record(probe, body, reply.status, None)
                    err = {
                        "error": {
                            "message": reply.error or f"scripted {reply.status}",
                            "type": "server_error",
                            "code": reply.error_code or reply.status,
                        }
                    }
                    return self._send(reply.status, json.dumps(err).encode(), reply.headers)
                message = {"role": "assistant", "content": reply.content}
                if reply.reasoning is not None:
                    message["reasoning_content"] = reply.reasoning
                if reply.tool_calls:
                    message["tool_calls"] = [
                        {
                            "id": c.get("id", f"call_{i}"),
                            "type": "function",
                            "function": {
                                "name": c["name"],
                                "arguments": c["arguments"]
                                if isinstance(c["arguments"], str)
                                else json.dumps(c["arguments"]),
                            },
                        }
                        for i, c in enumerate(reply.tool_calls)
                    ]
                finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
                server._record(probe, body, 200, message)
                completion = {
                    "id": f"cmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", server.model),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {
                        "prompt_tokens": reply.usage[0],
                        "completion_tokens": reply.usage[1],
                        "total_tokens": sum(reply.usage),
                    },
                }
                self._send(200, json.dumps(completion).encode(), reply.headers)

            def _send(self, status, payload: bytes, headers=None):
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        # `sock`: a socket bound earlier and held since (see reserve_ports), so no other test can
        # take its port between "nobody listens here" and "now a server does".
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler, bind_and_activate=sock is None)
        if sock is not None:
            self._httpd.socket.close()
            self._httpd.socket, self._httpd.server_address = sock, sock.getsockname()
            self._httpd.server_activate()
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _record(self, probe: bool, request: dict, status: int, message: dict | None) -> None:
        if probe:
            return
        with self._lock:
            self.exchanges.append(Exchange(request, status, message))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def terminus_json(commands: list[tuple[str, float]] | None = None, complete: bool = False, analysis: str = "") -> str:
    return json.dumps(
        {
            "analysis": analysis,
            "plan": "",
            "task_complete": complete,
            "commands": [{"keystrokes": k, "duration": d} for k, d in (commands or [])],
        }
    )


def solving_policy(solutions: dict[str, str]) -> Policy:
    """A terminus policy that types the solution of the task named in the first user message,
    then claims completion and confirms. `solutions`: instruction snippet -> shell script."""

    def policy(request):
        msgs = request["messages"]
        first_user = next(m["content"] for m in msgs if m["role"] == "user")
        turns = sum(1 for m in msgs if m["role"] == "assistant")
        script = next((s for key, s in solutions.items() if key in first_user), "true\n")
        if turns == 0:
            return Reply(terminus_json([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", 0.5)]))
        if turns == 1:
            return Reply(terminus_json([("ls\n", 0.1)]))
        return Reply(terminus_json([], complete=True))

    return policy
