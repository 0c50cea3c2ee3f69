"""`agentmill tools serve` driven by the official MCP SDK's client over streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.tools.helpers import make_tool_task

AGENTMILL = Path(sys.executable).with_name("agentmill")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str]) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    proc = subprocess.Popen(
        [str(AGENTMILL), "tools", "serve", *args, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"tools serve exited: {proc.stderr.read().decode()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("tools serve did not listen")


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def _session(port: int, work):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


def test_an_mcp_client_lists_and_calls_the_sandboxed_tools(tmp_path):
    task = make_tool_task(tmp_path / "task")
    db = tmp_path / "state.sqlite"
    proc, port = _start([str(task), "--db", str(db)])
    try:

        async def work(session):
            listed = await session.list_tools()
            closed = await session.call_tool("close_ticket", {"ticket_id": 2, "resolution": "cleared the jam"})
            got = await session.call_tool("get_ticket", {"ticket_id": 2})
            unknown = await session.call_tool("drop_tables", {})
            bad = await session.call_tool("set_priority", {"ticket_id": 2, "priority": "urgent"})
            return listed, closed, got, unknown, bad

        listed, closed, got, unknown, bad = asyncio.run(_session(port, work))
    finally:
        _stop(proc)
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"list_tickets", "get_ticket", "close_ticket", "set_priority", "add_tags"}
    assert tools["add_tags"].inputSchema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert not closed.isError and json.loads(closed.content[0].text) == {"id": 2, "status": "closed"}
    assert json.loads(got.content[0].text)["resolution"] == "cleared the jam"
    assert unknown.isError and "unknown tool 'drop_tables'" in unknown.content[0].text
    assert bad.isError and "priority: expected integer" in bad.content[0].text
    # --db: the state written through MCP is in the file, and a restarted server starts from it
    row = sqlite3.connect(db).execute("SELECT status FROM tickets WHERE id = 2").fetchone()
    assert row == ("closed",)
    proc, port = _start([str(task), "--db", str(db)])
    try:

        async def again(session):
            return await session.call_tool("close_ticket", {"ticket_id": 2, "resolution": "twice"})

        second = asyncio.run(_session(port, again))
    finally:
        _stop(proc)
    assert second.isError and "already closed" in second.content[0].text


@pytest.mark.parametrize("command", ["tools", "env"])  # `env`: the command's old name, kept as a hidden alias
def test_serving_an_unknown_target_is_one_clear_error(tmp_path, command):
    run = subprocess.run(
        [str(AGENTMILL), command, "serve", "no-such-gym", "--port", str(_free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "no-such-gym: not a task folder nor a bundled gym" in run.stderr


def test_a_bundled_gym_is_served_by_name():
    proc, port = _start(["itsm"])
    try:

        async def work(session):
            listed = await session.list_tools()
            me = await session.call_tool("get_current_user", {})
            return listed, me

        listed, me = asyncio.run(_session(port, work))
    finally:
        _stop(proc)
    names = {t.name for t in listed.tools}
    assert len(names) >= 25 and {"get_incident", "search_incidents", "get_current_user"} <= names
    assert not me.isError and json.loads(me.content[0].text)
