"""Judged steps: a family of tasks may add a model-judged verdict after its deterministic test run.

Grounded tasks are the case in point: their test script checks the deliverables' files and formats
inside the sandbox and hands the deliverables, as text, to the host (/logs/verifier/judge_input.json,
read like the reward files); the family's judged step then asks the judge endpoint
(AGENTMILL_JUDGE_MODEL / AGENTMILL_JUDGE_BASE_URL) to score the rubric.

A family is named by its task.toml's `[metadata] source`. The bundled family (grounded) is built in as
a lazy "module:function" target, so the verifier imports it only when such a task is verified; a
plug-in package adds its own through the `agentmill.judged_steps` entry-point group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agentmill.registry import Registry
from agentmill.tasks.model import Task

if TYPE_CHECKING:
    from agentmill.verify.test_script import VerifierResult

JudgedStep = Callable[[Task, "VerifierResult"], Awaitable["VerifierResult"]]
GROUP = "agentmill.judged_steps"

JUDGED_STEPS: Registry[JudgedStep] = Registry(
    "judged step",
    group=GROUP,
    builtins={
        "grounded": "agentmill.grounded.verifier:judge_rubric",
        "stackexchange": "agentmill.sources.answer_judge:judge_answer",  # judged Q&A answers
    },
)


def judged_step_for(task: Task) -> JudgedStep | None:
    """The judged step of the task's family, or None (most tasks: the test run alone decides)."""
    source = task.config.metadata.get("source")
    if not isinstance(source, str) or source not in JUDGED_STEPS:
        return None
    return JUDGED_STEPS.get(source)
