"""What a tool_execution verifier counts: the tool host's own record of the calls, not the agent's.

The tool host appends one line per call (name, is_error, rows written) beside the databases, where
only it can write (tools/guest/toolhost.py `log_call`). A look-up is a call that succeeded, to a tool
the task exposes: an unknown tool, bad arguments or a tool that raised is not one.
"""

from __future__ import annotations

import json

from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.tool_spec import ToolSpec
from agentmill.tools.state import TOOLS_ROOT

CALL_LOG = f"{TOOLS_ROOT}/calls.jsonl"


def exposed(spec: ToolSpec, name: str) -> bool:
    return (not spec.selected_tools or name in spec.selected_tools) and name not in spec.restricted_tools


def successful_calls(spec: ToolSpec, text: str) -> list[str]:
    """The names of the successful calls to exposed tools, in order, from the log's text."""
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last line (the host killed mid-write) is no call
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and entry.get("is_error") is False and exposed(spec, name):
            out.append(name)
    return out


async def read_calls(spec: ToolSpec, sb: Sandbox) -> list[str]:
    try:
        data = await sb.read_file(CALL_LOG, max_bytes=64 << 20)
    except FileNotFoundError:
        return []  # no call reached the tools
    return successful_calls(spec, data.decode("utf-8", "replace"))
