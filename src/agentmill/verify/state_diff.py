"""Every tool task's default guarantee: nothing changed that the task does not change.

Run by the shared tool-task verification (verify/sql_state.py) for every tool task, bundled,
imported or synthesized, and by the mutation audit on each wrong end state. In the verifier's
sandbox, from the task's own files (never from anything in the trial's filesystem): the untouched
state is built again from the seed on a private tmpfs, the reference calls (solution/calls.json)
are replayed on two copies of it, and each end state is diffed against the untouched one
(envs/guest/statediff.py). A change the reference did not make is a violation, outside the
bookkeeping fields the tools write on their own. Whether the asked-for change was made right is
the task's verifiers' question, not this one's.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentmill.envs.state import PYTHON, guest_json, prepare_tool_state, require_spec
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task

NAME = "nothing_else_changed"  # the check's name in reward.json and verifiers.json
VERIFIER_TYPE = "state_diff"
WORK = "/tmp/agentmill-verify/state-diff"  # the verifier sandbox's private tmpfs
_TIMEOUT = 300.0


def applies(task: Task) -> bool:
    """A reference end state exists only where the task has reference calls."""
    return require_spec(task).calls is not None


async def diff_states(task: Task, sb: Sandbox, finals: dict[str, str]) -> dict:
    """{bookkeeping, violations: {label: [text]}, reference_dir, ...} for each `label: databases dir`."""
    spec = require_spec(task)
    untouched = f"{WORK}/untouched"
    await prepare_tool_state(task, sb, root=untouched, force=True)
    script = f"{WORK}/statediff.py"
    await sb.write_file(script, (Path(__file__).resolve().parent.parent / "envs" / "guest" / "statediff.py").read_bytes())
    request = {"toolhost": f"{untouched}/runtime/toolhost.py", "spec": f"{untouched}/spec.json",
               "calls": [{"tool": c.tool, "arguments": dict(c.arguments)} for c in spec.calls or ()],
               "work": f"{WORK}/replays", "ignore": list(task.config.metadata.get("mutation_ignore", [])),
               "finals": finals}
    await sb.write_file(f"{WORK}/request.json", json.dumps(request).encode())
    return await guest_json(sb, [*PYTHON, script, f"{WORK}/request.json"], timeout=_TIMEOUT,
                            what="comparing the end state with the reference's")


def verdict(found: list[str]) -> tuple[bool, str]:
    """(passed, details) of one end state's violations."""
    if not found:
        return True, "no change outside what the reference changes"
    shown = "; ".join(found[:8]) + (f"; ... {len(found) - 8} more" if len(found) > 8 else "")
    return False, f"changed what the task does not change: {shown}"
