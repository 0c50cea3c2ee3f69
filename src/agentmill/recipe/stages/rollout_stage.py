"""The rollout as a recipe stage: tasks in, one trace per finished trial out.

The rollout itself (identity, resume, the model session) is `rollout.py`'s `rollout_tasks`; this
wraps it in the Stage interface. Its run folder is `<stage folder>/run`, an ordinary rollout
folder (resumable by `agentmill rollout`, readable by `status`, `export` and `view`).
"""

from __future__ import annotations

import os
from pathlib import Path

from agentmill.recipe.schema import Recipe
from agentmill.recipe.stage import Stage, StageContext, register_stage
from agentmill.recipe.stages.rollout import rollout_identity, rollout_tasks
from agentmill.traces.records import iter_traces


@register_stage
class RolloutStage(Stage):
    name = kind = "rollout"
    consumes, produces = "tasks", "traces"

    def __init__(self, recipe: Recipe):
        self.recipe, self.step = recipe, "rollout"
        self.model = recipe.rollout.model or recipe.model

    def settings(self):
        return rollout_identity(self.recipe.rollout, self.model)

    def describe(self) -> str:
        return f"rollout: {self.recipe.rollout.agent}"

    async def run(self, records, ctx: StageContext):
        tasks = [t async for t in records]
        hooks = ctx.progress(len(tasks) * self.recipe.rollout.attempts) if ctx.progress else None
        try:
            report = await rollout_tasks(tasks, self.recipe.rollout, self.model, ctx.out / "run",
                                         dataset_id=f"recipe:{ctx.out.name}", on_start=hooks.started if hooks else None,
                                         on_done=hooks.finished if hooks else None, say=ctx.say)
        finally:
            if hooks:
                hooks.close()
        ctx.report.dropped += report.dropped
        ctx.report.notes += report.notes
        skipped: list[str] = []
        for rec in iter_traces(ctx.out / "run", errors=skipped):
            yield rec
        ctx.report.notes += [f"unreadable trial: {s}" for s in skipped]

    def publish(self, out: Path, run_dir: Path) -> None:
        link = run_dir / "rollout"
        if link.is_symlink() or link.is_file():
            link.unlink()
        link.symlink_to(os.path.relpath(out / "run", run_dir))
