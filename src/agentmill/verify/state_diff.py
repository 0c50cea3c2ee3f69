"""Every tool task's default guarantee: nothing changed that the task does not change.

Run by the shared tool-task verification (verify/sql_state.py) for every tool task, bundled,
imported or synthesized, and by the mutation audit on each wrong end state. In the verifier's
sandbox: the untouched state is the copy the tool host kept when it built the trial's state (in
its own sandbox, which the agent cannot write; rebuilt from the task's files where there is none),
the reference calls (solution/calls.json) are replayed on two copies of it, and each end state is diffed against the untouched one
(tools/guest/statediff.py). A change the reference did not make is a violation, outside the
bookkeeping fields the tools write on their own. Whether the asked-for change was made right is
the task's verifiers' question, not this one's.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentmill.errors import SandboxError
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.tools.state import (
    PYTHON,
    TOOLS_ROOT,
    guest_json,
    prepare_tool_state,
    require_spec,
    sandbox_spec,
    toolhost_source,
)

NAME = "nothing_else_changed"  # the check's name in reward.json and verifiers.json
VERIFIER_TYPE = "state_diff"
PRIVATE = "/tmp/agentmill-verify"  # the verifier sandbox's private tmpfs
WORK = f"{PRIVATE}/state-diff"
UNTOUCHED = f"{TOOLS_ROOT}/untouched"  # the tool host's copy of the state before any call
_TIMEOUT = 300.0


def applies(task: Task) -> bool:
    """A reference end state exists only where the task has reference calls."""
    return require_spec(task).calls is not None


async def diff_states(task: Task, sb: Sandbox, finals: dict[str, str]) -> dict:
    """{bookkeeping, violations: {label: [text]}, reference_dir, ...} for each `label: databases dir`.

    The untouched state is the copy the tool host kept when it built the state (in its own sandbox,
    out of the agent's reach); where there is none, it is built again from the task's files."""
    spec = require_spec(task)
    if await _has_untouched(task, sb):
        spec_path, toolhost = await _stage(task, sb, UNTOUCHED)
    else:
        rebuilt = f"{WORK}/untouched"
        await prepare_tool_state(task, sb, root=rebuilt, force=True)
        spec_path, toolhost = f"{rebuilt}/spec.json", f"{rebuilt}/runtime/toolhost.py"
    script = f"{WORK}/statediff.py"
    await sb.write_file(
        script, (Path(__file__).resolve().parent.parent / "tools" / "guest" / "statediff.py").read_bytes()
    )
    request = {
        "toolhost": toolhost,
        "spec": spec_path,
        "calls": [{"tool": c.tool, "arguments": dict(c.arguments)} for c in spec.calls or ()],
        "work": f"{WORK}/replays",
        "ignore": list(task.config.metadata.get("mutation_ignore", [])),
        "finals": finals,
    }
    await sb.write_file(f"{WORK}/request.json", json.dumps(request).encode())
    return await guest_json(
        sb,
        [*PYTHON, script, f"{WORK}/request.json"],
        timeout=_TIMEOUT,
        what="comparing the end state with the reference's",
    )


async def _stage(task: Task, sb: Sandbox, db_dir: str) -> tuple[str, str]:
    """A fresh tool host and a spec whose databases are `db_dir`'s, on the private tmpfs."""
    spec = sandbox_spec(require_spec(task))
    for g in spec["gyms"]:
        g["db"] = f"{db_dir}/{g['name']}.sqlite"
    await sb.write_file(f"{WORK}/toolhost.py", toolhost_source())
    await sb.write_file(f"{WORK}/spec.json", json.dumps(spec).encode())
    return f"{WORK}/spec.json", f"{WORK}/toolhost.py"


async def _has_untouched(task: Task, sb: Sandbox) -> bool:
    for gym in require_spec(task).gyms:
        try:
            await sb.read_file(f"{UNTOUCHED}/{gym.name}.sqlite", max_bytes=1)
        except (FileNotFoundError, SandboxError):
            return False
    return True


def verdict(found: list[str]) -> tuple[bool, str]:
    """(passed, details) of one end state's violations."""
    if not found:
        return True, "no change outside what the reference changes"
    shown = "; ".join(found[:8]) + (f"; ... {len(found) - 8} more" if len(found) > 8 else "")
    return False, f"changed what the task does not change: {shown}"
