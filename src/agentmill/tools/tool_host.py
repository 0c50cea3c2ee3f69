"""A trial's tool host in a sandbox of its own: the databases where the agent cannot write.

An agent is a plug-in and may have a shell in its sandbox as well as the tools; anything in that
sandbox's filesystem it can write, the tool databases and the tool host's call log included. So a
trial's tools run in a second sandbox over a root filesystem of their own (another uid, nothing of
it mounted into the agent's): the agent reaches the tools only through the tool session (a unix
socket in the tool host's control directory, which only the host can reach), and the verifier's
sandbox reads the end state from the tool host's root filesystem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from agentmill.sandbox.protocol import Limits, Sandbox
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks.model import Task
from agentmill.tools.state import prepare_tool_state


async def start_tool_host(task: Task, image, rootfs: Path, limits: Limits) -> Sandbox:
    """A started sandbox over `rootfs` (a fresh copy of the task's image) with the task's state built."""
    sandbox = create_sandbox(image.spec(rootfs, limits=limits))
    await sandbox.start()
    try:
        await prepare_tool_state(task, sandbox)
    except BaseException:
        await sandbox.stop()
        raise
    return sandbox


def attach(agent_sandbox: Sandbox, tool_host: Sandbox) -> None:
    """Tool sessions opened on the agent's sandbox go to the tool host (tools/state.py tool_host_of)."""
    cast(Any, agent_sandbox).tool_host = tool_host  # beyond the Sandbox protocol: state.tool_host_of reads it
