"""A tool session: the agent's view of a tool task's tools, executed inside the trial's sandbox.

    async with open_tool_session(task, sandbox) as session:
        session.tools                      # OpenAI function schemas
        result = await session.call("get_incident", {"number": "INC0001"})

The tool host (guest/toolhost.py) runs in the sandbox as a long-lived process listening on a unix
socket in the sandbox's control directory (host-reachable, never agent-visible), and forks a child
per call. Sandboxes without a control directory get one `python3 toolhost.py once` exec per call.
`call` never raises for the model's mistakes or the tool's failures: they come back as is_error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agentmill.errors import SandboxError
from agentmill.sandbox.protocol import Capability, Sandbox, WithControlDir
from agentmill.sandbox.sockets import pin_socket, pinned_path
from agentmill.tasks.model import Task
from agentmill.tools.state import (
    HOST_SCRIPT,
    PYTHON,
    SPEC_PATH,
    TOOLS_ROOT,
    ToolEnvError,
    guest_json,
    prepare_tool_state,
    require_spec,
    tool_host_of,
    tool_schemas,
)

CTL_INSIDE = "/.agentmill/ctl"  # where the bubblewrap sandbox mounts its control directory
MAX_CONTENT = 100_000  # characters of a tool result the model sees
_GRACE = 5.0  # the tool host enforces the per-call timeout; the host waits this much longer
_START_TIMEOUT = 20.0


@dataclass
class ToolResult:
    content: str
    is_error: bool = False
    seconds: float = 0.0
    changes: int = 0  # rows the call wrote (0 for reads and errors)


def openai_tool(schema: dict) -> dict:
    return {
        "type": "function",
        "function": {"name": schema["name"], "description": schema["description"], "parameters": schema["parameters"]},
    }


class ToolSession:
    """Tools of one task in one sandbox. Calls are applied one at a time, in the order made."""

    def __init__(self, task: Task, sandbox: Sandbox):
        spec = require_spec(task)
        self.task, self.sandbox = task, tool_host_of(sandbox)  # a trial's tools run in their own sandbox
        self.schemas: list[dict] = []
        self.tools: list[dict] = []
        self.names: set[str] = set()
        self.timeout = spec.tool_timeout_sec
        self.calls = 0
        self.errors = 0
        self._lock = asyncio.Lock()
        self._socket: Path | None = None  # /proc/self/fd/N of the pinned socket
        self._socket_fd: int | None = None
        self._socket_name: Path | None = None
        self._server_pid: int | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def _expose(self, schemas: list[dict]) -> None:
        spec = require_spec(self.task)
        selected, restricted = set(spec.selected_tools), set(spec.restricted_tools)
        self.schemas = [s for s in schemas if (not selected or s["name"] in selected) and s["name"] not in restricted]
        self.tools = [openai_tool(s) for s in self.schemas]
        self.names = {s["name"] for s in self.schemas}

    async def start(self) -> None:
        """Start the tool host (it loads and introspects the tools) and learn the tools from it."""
        host = cast(WithControlDir, self.sandbox)  # its control_dir and uid, read where it declares them
        ctl = host.control_dir if Capability.CONTROL_DIR in self.sandbox.capabilities else None
        if ctl is None:  # one exec per call
            self._expose(await tool_schemas(self.task, self.sandbox))
            return
        name = f"tools-{uuid.uuid4().hex[:8]}.sock"
        log = f"{TOOLS_ROOT}/host-{name}.log"
        cmd = f"exec {' '.join(PYTHON)} {HOST_SCRIPT} serve {SPEC_PATH} {CTL_INSIDE}/{name} </dev/null >{log} 2>&1 &"
        run = await self.sandbox.exec(["/bin/sh", "-c", cmd], timeout=30)
        if run.returncode != 0:
            raise ToolEnvError(f"{self.task.path}: the tool host did not start: {run.output.strip()[-400:]}")
        path = Path(ctl) / name
        failed = Path(ctl) / f"{name}.error"
        deadline = time.monotonic() + _START_TIMEOUT
        while not path.exists():
            if failed.exists():  # tools.py broke the contract, or does not import
                raise ToolEnvError(
                    f"{self.task.path}: loading the tools failed: {failed.read_text(errors='replace')[:1000]}"
                )
            if time.monotonic() > deadline:
                tail = (await self.sandbox.exec(["tail", "-c", "2000", log], timeout=10)).stdout
                raise ToolEnvError(f"{self.task.path}: the tool host did not start: {tail.strip()}")
            await asyncio.sleep(0.002)
        # Pinned now, connected through the pin from here on: the name sits in a folder the agent
        # can write, and a link swapped in later must not take the host's requests elsewhere.
        self._socket_fd = pin_socket(path, host.uid)
        if self._socket_fd is None:
            raise ToolEnvError(f"{self.task.path}: the tool host's {name} is not a socket it made")
        self._socket_name = path
        self._socket = pinned_path(self._socket_fd)
        ping = await self._socket_request({"op": "ping"}, 10)
        self._server_pid = ping.get("pid")
        if not self.schemas:
            self._expose((await self._socket_request({"op": "list"}, 30))["tools"])

    async def close(self) -> None:
        if self._server_pid is not None:
            with contextlib.suppress(SandboxError, OSError):
                await self.sandbox.exec(["kill", "-9", str(self._server_pid)], timeout=10)
            self._server_pid = None
        if self._socket is not None:
            assert self._socket_fd is not None and self._socket_name is not None  # pinned with _socket
            with contextlib.suppress(OSError):
                os.close(self._socket_fd)
            with contextlib.suppress(OSError):
                self._socket_name.unlink()  # the name itself: unlink never follows a link
            self._socket = None

    # -- calls -----------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Any) -> ToolResult:
        """Run one tool. Unknown names, bad arguments and failing tools return is_error results."""
        started = time.monotonic()
        self.calls += 1
        result = await self._call(name, arguments)
        result.seconds = time.monotonic() - started
        if result.is_error:
            self.errors += 1
        if len(result.content) > MAX_CONTENT:
            result.content = (
                result.content[:MAX_CONTENT] + f"\n[... {len(result.content) - MAX_CONTENT} characters cut]"
            )
        return result

    async def _call(self, name: str, arguments: Any) -> ToolResult:
        if not isinstance(name, str) or name not in self.names:
            return ToolResult(f"unknown tool '{name}'. Available tools: {', '.join(sorted(self.names))}", True)
        if isinstance(arguments, str):  # models send arguments as a JSON string
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as e:
                return ToolResult(f"arguments of '{name}' are not valid JSON: {e.msg} at column {e.colno}", True)
        if not isinstance(arguments, dict):
            return ToolResult(f"arguments of '{name}' must be a JSON object", True)
        request = {"op": "call", "name": name, "arguments": arguments, "timeout": self.timeout}
        async with self._lock:
            try:
                reply = await self._request(request, self.timeout + _GRACE)
            except (TimeoutError, SandboxError, ToolEnvError, OSError) as e:
                return ToolResult(f"tool '{name}' failed: the tool host did not answer ({e})", True)
        content = reply.get("content")
        if not isinstance(content, str):
            return ToolResult(f"tool '{name}' failed: malformed reply from the tool host", True)
        return ToolResult(content, bool(reply.get("is_error")), changes=int(reply.get("changes") or 0))

    async def _request(self, request: dict, timeout: float) -> dict:
        if self._socket is not None:
            try:
                return await self._socket_request(request, timeout)
            except (TimeoutError, OSError):
                # The host died or hung (a tool killed it?): this call fails, never re-run (it may
                # have written), and the next call gets a fresh host.
                await self.close()
                await self.start()
                raise
        return await guest_json(
            self.sandbox,
            [*PYTHON, HOST_SCRIPT, "once", SPEC_PATH],
            stdin=request,
            timeout=timeout,
            what="the tool host",
        )

    async def _socket_request(self, request: dict, timeout: float) -> dict:
        reader, writer = await asyncio.open_unix_connection(str(self._socket), limit=8 << 20)
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), timeout)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        if not line:
            raise ConnectionError("the tool host closed the connection")
        return json.loads(line)


@contextlib.asynccontextmanager
async def open_tool_session(task: Task, sandbox: Sandbox) -> AsyncIterator[ToolSession]:
    """Prepare the task's state (if the trial has not), load the tools inside the sandbox, serve them."""
    await prepare_tool_state(task, sandbox)
    session = ToolSession(task, sandbox)
    try:
        await session.start()
        yield session
    finally:
        await session.close()
