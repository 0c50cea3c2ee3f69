"""What a tool_execution verifier counts (verify/call_log.py): successful calls to exposed tools,
from the tool host's own log. The end-to-end attacks (an unknown tool, a failed call counted as a
look-up) are in tests/tools/test_tool_reward_hacks.py; these pin the rules one line at a time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentmill.tasks.tool_spec import GymRef, ToolSpec
from agentmill.verify.call_log import CALL_LOG, exposed, read_calls, successful_calls

GYM = (GymRef(name="itsm", path=Path("/nowhere")),)
ALL = ToolSpec(gyms=GYM)
PICKED = ToolSpec(gyms=GYM, selected_tools=("get_ticket", "assign"), restricted_tools=("delete_all",))
RESTRICTED = ToolSpec(gyms=GYM, restricted_tools=("delete_all",))


def line(name, is_error=False, **kw) -> str:
    return json.dumps({"name": name, "is_error": is_error, **kw})


@pytest.mark.parametrize(
    ("spec", "name", "seen"),
    [
        (ALL, "anything", True),
        (PICKED, "get_ticket", True),
        (PICKED, "close", False),  # not selected: the agent was never shown it
        (PICKED, "delete_all", False),
        (RESTRICTED, "delete_all", False),  # restricted wins over "all tools"
        (RESTRICTED, "close", True),
    ],
)
def test_a_tool_is_exposed_when_selected_or_all_are_and_never_when_restricted(spec, name, seen):
    assert exposed(spec, name) is seen


def test_only_successful_calls_to_exposed_tools_count_in_order():
    text = "\n".join(
        [
            line("assign"),
            "not json",  # a line the reader cannot parse is skipped, not the end of the log
            line("get_ticket", is_error=True),  # raised or bad arguments
            line("close"),  # not exposed
            line("get_ticket", rows=0),
            json.dumps({"name": "assign"}),  # no is_error: not a recorded success
            json.dumps({"name": "assign", "is_error": 0}),  # falsy but not False
            json.dumps({"name": 7, "is_error": False}),
            json.dumps(["assign", False]),
            line("assign")[:-5],  # a torn last line
        ]
    )
    assert successful_calls(PICKED, text) == ["assign", "get_ticket"]


def test_no_log_text_is_no_call():
    assert successful_calls(ALL, "") == []


class LogSandbox:
    """Where the verifier's sandbox stands: read_file of the log, or no log at all."""

    def __init__(self, data: bytes | None):
        self.data, self.asked = data, []

    async def read_file(self, path, max_bytes=None):
        self.asked.append((path, max_bytes))
        if self.data is None:
            raise FileNotFoundError(path)
        return self.data


def test_the_log_is_read_from_the_tool_hosts_folder_and_decoded_leniently():
    sb = LogSandbox((line("assign") + "\n" + line("get_ticket") + "\n").encode() + b"\xff\n")
    assert asyncio.run(read_calls(PICKED, sb)) == ["assign", "get_ticket"]
    assert sb.asked == [(CALL_LOG, 64 << 20)]


def test_no_log_means_no_call_reached_the_tools():
    assert asyncio.run(read_calls(ALL, LogSandbox(None))) == []
