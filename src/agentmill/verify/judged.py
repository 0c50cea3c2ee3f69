"""Judged steps: a family of tasks may add a model-judged verdict after its deterministic test run.

Grounded tasks are the case in point: their test script checks the deliverables' files and formats
inside the sandbox and hands the deliverables, as text, to the host (/logs/verifier/judge_input.json,
read like the reward files); the family's judged step then asks the judge endpoint
(AGENTMILL_JUDGE_MODEL / AGENTMILL_JUDGE_BASE_URL) to score the rubric.

A family is named by its task.toml's `[metadata] source`. Families outside the verifier register
through the `agentmill.judged_steps` entry-point group (name = the source, value = a JudgedStep), so
the verifier imports none of them and a plug-in package can add its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from agentmill.tasks.model import Task

if TYPE_CHECKING:
    from agentmill.verify.test_script import VerifierResult

JudgedStep = Callable[[Task, "VerifierResult"], Awaitable["VerifierResult"]]
GROUP = "agentmill.judged_steps"

_STEPS: dict[str, JudgedStep] = {}
_discovered = False


def judged_step_for(task: Task) -> JudgedStep | None:
    """The judged step of the task's family, or None (most tasks: the test run alone decides)."""
    source = task.config.metadata.get("source")
    if not isinstance(source, str):
        return None
    _discover()
    return _STEPS.get(source)


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for ep in entry_points(group=GROUP):
        _STEPS[ep.name] = ep.load()
