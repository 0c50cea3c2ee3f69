"""Tool sessions: schemas from the tool contract, calls and their errors, isolation inside the sandbox."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest

from agentmill.tasks import load_task
from agentmill.tools import open_tool_session
from agentmill.tools.sandboxed import task_sandbox
from agentmill.tools.state import gym_db
from tests.tools.helpers import make_tool_task


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def helpdesk(tmp_path):
    return load_task(make_tool_task(tmp_path / "close-vpn"))


@pytest.fixture
def hostile(tmp_path):
    return load_task(make_tool_task(tmp_path / "hostile", gym="hostile", calls=[], toml_extra="tool_timeout_sec = 2"))


def test_schemas_follow_the_tool_contract(helpdesk):
    async def go():
        async with task_sandbox(helpdesk) as sb, open_tool_session(helpdesk, sb) as s:
            return s.tools

    tools = {t["function"]["name"]: t for t in run(go())}
    assert set(tools) == {"list_tickets", "get_ticket", "close_ticket", "set_priority", "add_tags"}  # not _helper
    assert all(t["type"] == "function" for t in tools.values())
    lt = tools["list_tickets"]["function"]
    assert lt["description"] == "List tickets, optionally only those with one status."
    status = lt["parameters"]["properties"]["status"]
    assert status["anyOf"][0] == {"type": "string", "enum": ["open", "pending", "closed"]}
    assert status["description"] == "only tickets with this status" and status["default"] is None
    assert lt["parameters"]["required"] == []
    tags = tools["add_tags"]["function"]["parameters"]
    assert tags["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert tags["required"] == ["ticket_id", "tags"] and tags["additionalProperties"] is False


def test_calls_change_state_and_mistakes_come_back_as_errors(helpdesk):
    async def go():
        async with task_sandbox(helpdesk) as sb, open_tool_session(helpdesk, sb) as s:
            out = {
                "list": await s.call("list_tickets", {"status": "open"}),
                "unknown": await s.call("delete_everything", {}),
                "bad_type": await s.call("set_priority", {"ticket_id": "one", "priority": 1}),
                "bool_is_not_int": await s.call("set_priority", {"ticket_id": True, "priority": 1}),
                "missing": await s.call("close_ticket", {"ticket_id": 1}),
                "extra": await s.call("close_ticket", {"ticket_id": 1, "resolution": "x", "force": True}),
                "enum": await s.call("list_tickets", {"status": "archived"}),
                "json_text": await s.call("get_ticket", '{"ticket_id": 2}'),
                "bad_json": await s.call("get_ticket", '{"ticket_id": '),
                "raises": await s.call("get_ticket", {"ticket_id": 99}),
                "close": await s.call("close_ticket", {"ticket_id": 1, "resolution": "renewed cert"}),
                "again": await s.call("close_ticket", {"ticket_id": 1, "resolution": "again"}),
                "tags": await s.call("add_tags", {"ticket_id": 2, "tags": ["hw", "floor3"]}),
                "after": await s.call("get_ticket", {"ticket_id": 2}),
            }
            return out, s.calls, s.errors

    out, calls, errors = run(go())
    assert not out["list"].is_error and [t["id"] for t in json.loads(out["list"].content)] == [1, 2]
    assert out["unknown"].is_error and "unknown tool 'delete_everything'" in out["unknown"].content
    assert out["bad_type"].is_error and "ticket_id: expected integer" in out["bad_type"].content
    assert out["bool_is_not_int"].is_error
    assert out["missing"].is_error and "missing required argument 'resolution'" in out["missing"].content
    assert out["extra"].is_error and "unknown argument 'force'" in out["extra"].content
    assert out["enum"].is_error and "must be one of" in out["enum"].content
    assert json.loads(out["json_text"].content)["id"] == 2
    assert out["bad_json"].is_error and "not valid JSON" in out["bad_json"].content
    assert out["raises"].is_error and out["raises"].content == "ValueError: no ticket 99"
    assert not out["close"].is_error
    assert out["again"].is_error and "already closed" in out["again"].content  # the write was committed
    assert json.loads(out["after"].content)["tags"] == ["floor3", "hw"]
    assert (calls, errors) == (14, 9)


def test_selected_and_restricted_tools_limit_what_the_agent_sees(tmp_path):
    task = load_task(
        make_tool_task(
            tmp_path / "t", toml_extra='tools = ["get_ticket", "close_ticket"]\nrestricted_tools = ["close_ticket"]'
        )
    )

    async def go():
        async with task_sandbox(task) as sb, open_tool_session(task, sb) as s:
            return [t["function"]["name"] for t in s.tools], await s.call(
                "close_ticket", {"ticket_id": 1, "resolution": "x"}
            )

    names, hidden = run(go())
    assert names == ["get_ticket"]
    assert hidden.is_error and "unknown tool" in hidden.content


def test_misbehaving_tools_end_the_call_not_the_session(hostile):
    async def go():
        async with task_sandbox(hostile) as sb, open_tool_session(hostile, sb) as s:
            out = {}
            for name, args in [
                ("spin", {}),
                ("boom", {"ticket_id": 1}),
                ("weird", {}),
                ("crash", {}),
                ("kill_host", {}),
                ("linger", {}),
                ("get_title", {"ticket_id": 1}),
            ]:
                out[name] = await s.call(name, args)
            return out

    out = run(go())
    assert out["spin"].is_error and "timed out after 2s" in out["spin"].content
    assert out["spin"].seconds < 10
    assert out["boom"].is_error and out["boom"].content == "RuntimeError: kaboom"
    assert out["weird"].is_error and "not JSON-serialisable" in out["weird"].content
    assert out["crash"].is_error and "crashed" in out["crash"].content
    assert out["kill_host"].is_error
    # a process the tool left behind does not hold the call until the timeout
    assert not out["linger"].is_error and out["linger"].content == "left one behind" and out["linger"].seconds < 1.5
    # the session goes on, and boom's write before it raised was rolled back
    assert not out["get_title"].is_error and out["get_title"].content == "VPN drops every hour"


def test_tools_cannot_reach_the_network_or_the_host(hostile, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []

    def accept():
        try:
            accepted.append(server.accept())
        except OSError:  # closed at the end of the test
            pass

    threading.Thread(target=accept, daemon=True).start()
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only")
    secret.chmod(0o644)

    async def go():
        async with task_sandbox(hostile) as sb, open_tool_session(hostile, sb) as s:
            return (
                await s.call("network", {"host": "127.0.0.1", "port": port}),
                await s.call("read_file", {"path": str(secret)}),
                await s.call("read_file", {"path": "/work/main/pyproject.toml"}),
                await s.call("whoami", {}),
            )

    try:
        net, host_file, repo_file, who = run(go())
    finally:
        server.close()
    assert net.is_error and not accepted
    assert host_file.is_error and "FileNotFoundError" in host_file.content
    assert repo_file.is_error
    assert json.loads(who.content)["uid"] == 0  # uid 0 of its own user namespace, not the host's root


def test_two_trials_have_independent_databases(helpdesk):
    async def one(close: bool):
        async with task_sandbox(helpdesk) as sb, open_tool_session(helpdesk, sb) as s:
            if close:
                await s.call("close_ticket", {"ticket_id": 1, "resolution": "done"})
            await asyncio.sleep(0.2)  # both sessions open at once
            ticket = json.loads((await s.call("get_ticket", {"ticket_id": 1})).content)
            db = sb.spec.rootfs / gym_db("gym").lstrip("/")
            return ticket["status"], db

    async def both():
        return await asyncio.gather(one(True), one(False))

    (closed, db1), (still_open, db2) = run(both())
    assert (closed, still_open) == ("closed", "open")
    assert db1 != db2


def test_without_a_control_dir_each_call_is_one_exec(helpdesk):
    """Sandboxes that cannot host a socket still run tools inside the sandbox."""

    class NoSocket:  # declares no control folder: the capability, not the attribute, decides
        capabilities = frozenset()

        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

    async def go():
        async with task_sandbox(helpdesk) as sb, open_tool_session(helpdesk, NoSocket(sb)) as s:
            assert s._socket is None
            return (
                await s.call("close_ticket", {"ticket_id": 3, "resolution": "replaced"}),
                await s.call("get_ticket", {"ticket_id": 3}),
                await s.call("nope", {}),
            )

    closed, got, nope = run(go())
    assert not closed.is_error and json.loads(got.content)["status"] == "closed" and nope.is_error


def test_a_broken_tools_py_is_one_clear_error(tmp_path):
    task_dir = make_tool_task(tmp_path / "broken")
    tools = task_dir / "environment" / "gym" / "tools.py"
    tools.write_text(tools.read_text() + '\n\ndef untyped(db, ticket_id):\n    """No hints."""\n')
    task = load_task(task_dir)
    from agentmill.tools import ToolEnvError

    async def go():
        async with task_sandbox(task) as sb:
            async with open_tool_session(task, sb):
                pass

    with pytest.raises(ToolEnvError, match=r"untyped: parameter 'ticket_id': has no type hint"):
        run(go())


def test_a_link_planted_in_the_control_dir_is_never_followed(hostile, tmp_path):
    host_socket = tmp_path / "host.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(host_socket))
    listener.listen(1)
    listener.settimeout(0.5)

    async def go():
        async with task_sandbox(hostile) as sb, open_tool_session(hostile, sb) as s:
            planted = await s.call("hijack", {"target": str(host_socket)})
            after = await s.call("get_title", {"ticket_id": 1})
            again = await s.call("get_title", {"ticket_id": 1})
            return planted, after, again

    try:
        planted, after, again = run(go())
        with pytest.raises(socket.timeout):  # the host's requests never went to the link's target
            listener.accept()
    finally:
        listener.close()
    # the tool host's socket was pinned when it appeared: the calls still reach it, not the link
    assert not planted.is_error
    assert not after.is_error and after.content == "VPN drops every hour" and again.content == after.content


def test_a_gyms_base_database_is_built_once_per_gym_content(tmp_path):
    import uuid

    from agentmill.tools import prepare_tool_state

    marker = uuid.uuid4().hex  # a gym no earlier run has built
    task_dir = make_tool_task(tmp_path / "t", seed_sql="UPDATE tickets SET priority = 4 WHERE id = 2;")
    seed = task_dir / "environment" / "gym" / "seed.sql"
    seed.write_text(seed.read_text() + f"INSERT INTO users (id, name, team) VALUES (9, '{marker}', 'x');\n")

    async def prepared(task):
        async with task_sandbox(task) as sb:
            built = await prepare_tool_state(task, sb)
            again = await prepare_tool_state(task, sb)
            async with open_tool_session(task, sb) as s:
                ticket = json.loads((await s.call("get_ticket", {"ticket_id": 2})).content)
            return built, again, ticket["priority"]

    task = load_task(task_dir)
    first, second = run(prepared(task)), run(prepared(task))
    assert first[0] == ["gym"] and second[0] == []  # the second sandbox got the cached base
    assert first[1] is None  # already prepared: nothing redone
    assert first[2] == second[2] == 4  # the task's own seed still applies on top
    seed.write_text(seed.read_text() + "UPDATE tickets SET title = 'changed' WHERE id = 3;\n")
    assert run(prepared(load_task(task_dir)))[0] == ["gym"]  # changed gym content: built again


def test_concurrent_calls_are_applied_one_at_a_time_in_the_order_made(helpdesk):
    async def go():
        async with task_sandbox(helpdesk) as sb, open_tool_session(helpdesk, sb) as s:
            # one model turn with several tool calls: the agent may fire them at once
            results = await asyncio.gather(
                *(s.call("set_priority", {"ticket_id": 2, "priority": p}) for p in (1, 2, 3, 4)),
                s.call("get_ticket", {"ticket_id": 2}),
            )
            return results

    *sets, got = run(go())
    assert [json.loads(r.content)["priority"] for r in sets] == [1, 2, 3, 4]
    assert json.loads(got.content)["priority"] == 4  # the read made last saw every write before it
