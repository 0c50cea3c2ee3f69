"""Drop tasks that do not start: the environment builds, the sandbox starts and the verifier runs.

Each task gets one trial with the nop agent. Its reward does not matter here (that is for solvability
filters); what matters is that the machinery around the task works: a sandbox_error (the image does
not build, needs a container engine, or the sandbox fails), a verifier_error (no reward written) or
a verifier_timeout drops the task with the trial's error as the reason.
"""

from __future__ import annotations

import asyncio

from agentmill.agents import NopAgent
from agentmill.errors import AgentmillError
from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.stages.task_filters.base import (
    FilterContext,
    FilterParams,
    bounded,
    copy_entry,
    one_line,
    parse_params,
    report,
)
from agentmill.rollout.trial import run_trial
from agentmill.sandbox.bwrap import require_tools
from agentmill.tasks import load_task
from agentmill.verify.outcome import Outcome

KIND = "starts"
BROKEN = (Outcome.SANDBOX_ERROR, Outcome.TASK_ERROR, Outcome.VERIFIER_ERROR, Outcome.VERIFIER_TIMEOUT)


class Params(FilterParams):
    pass


async def starts(tasks: list[TaskEntry], params: dict, ctx: FilterContext) -> tuple[list[TaskEntry], StageReport]:
    parse_params(KIND, Params, params)
    builder = ctx.builder
    if builder is None:
        raise AgentmillError(f"task filter '{KIND}' needs an image builder (none configured)")
    if tasks:
        try:
            require_tools()  # a host without a sandbox says nothing about the tasks: stop, do not drop them all
        except AgentmillError as e:
            raise AgentmillError(f"task filter '{KIND}': {e}") from None
    agent = NopAgent()

    async def check(entry: TaskEntry) -> tuple[str | None, list[str]]:
        try:
            task = await asyncio.to_thread(load_task, entry.path)
        except AgentmillError as e:
            return f"does not load: {one_line(str(e))}", []
        notes = []
        if task.content_hash != entry.content_hash:
            notes.append(f"{entry.name}: task folder changed since it entered the recipe (content hash differs)")
        result = await run_trial(task, agent, builder)
        if result.outcome in BROKEN:
            detail = one_line(result.exception) or "no error message"
            return f"{result.outcome.value}: {detail}", notes
        if result.outcome is Outcome.PASSED:
            notes.append(f"{entry.name}: passes with the nop agent (kept; the verifier may accept the untouched state)")
        return None, notes

    verdicts = await bounded(tasks, check, ctx.concurrency)
    kept: list[TaskEntry] = []
    dropped: list[Drop] = []
    notes: list[str] = []
    for entry, (reason, task_notes) in zip(tasks, verdicts):
        notes += task_notes
        if reason:
            dropped.append(Drop(name=entry.name, reason=reason))
        else:
            kept.append(copy_entry(entry))
    return kept, report(KIND, tasks, kept, dropped, notes)
