"""Task filters as recipe stages: `[[task_filters]] kind = "..."` names a registered filter.

A filter is a function `async (tasks, params, ctx: FilterContext) -> (kept, StageReport)`; the
stage validates its params when the recipe is planned (before anything is spent), gives it a
model when it asks for one, and turns its report into the funnel's reasons.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentmill.recipe.records import StageReport, TaskEntry
from agentmill.recipe.schema import Recipe
from agentmill.recipe.stage import Stage, StageContext, register_stage
from agentmill.recipe.stages.model_identity import model_identity
from agentmill.recipe.stages.task_filters.base import PACKAGED_PROMPTS, FilterContext

FilterFn = Callable[[list[TaskEntry], dict, FilterContext], Awaitable[tuple[list[TaskEntry], StageReport]]]


class TaskFilterStage(Stage):
    kind = "task_filter"
    consumes = produces = "tasks"
    fn: FilterFn
    check: Callable[[dict], Any]  # raises AgentmillError naming the bad param
    needs_model: bool = False
    path_params: tuple[str, ...] = ()  # params that list folders, relative to the recipe file

    def __init__(self, recipe: Recipe, index: int):
        self.recipe, self.index = recipe, index
        self.spec = recipe.task_filters[index]
        self.step = f"filter{index}-{self.name}"
        self.params = dict(self.spec.params)
        for key in self.path_params:
            if isinstance(self.params.get(key), list):
                self.params[key] = [str(recipe.resolve(p)) for p in self.params[key]]
        type(self).check(self.params)  # validate before spending
        self.model = (self.spec.model or recipe.model) if self.needs_model else None
        self.prompts_dir = recipe.resolve(recipe.augment.prompts_dir)

    def settings(self):
        return {"kind": self.name, "params": self.params,
                "model": model_identity(self.model) if self.model else None, "prompts": self._prompt_digest()}

    def describe(self) -> str:
        return f"task filter {self.name}"

    async def run(self, records, ctx: StageContext):
        tasks = [t async for t in records]
        fn = type(self).fn
        if self.model is not None:
            async with ctx.open_model(self.model) as model:
                kept, report = await fn(tasks, self.params, self._context(ctx, model))
        else:
            kept, report = await fn(tasks, self.params, self._context(ctx, None))
        ctx.report.dropped += report.dropped
        ctx.report.notes += report.notes
        for t in kept:
            yield t

    def _context(self, ctx: StageContext, model) -> FilterContext:
        return FilterContext(model=model, builder=ctx.builder, workdir=ctx.out,
                             prompts_dir=self.prompts_dir if model is not None else None)

    def _prompt_digest(self) -> str | None:
        if not self.needs_model:
            return None
        h = hashlib.sha256()
        for folder in [PACKAGED_PROMPTS] + ([self.prompts_dir] if self.prompts_dir else []):
            for p in sorted(Path(folder).glob("*.md")) if Path(folder).is_dir() else []:
                h.update(p.name.encode() + b"\0" + p.read_bytes())
        return h.hexdigest()[:16]


def register_task_filter(kind: str, fn: FilterFn, check: Callable[[dict], Any], *, needs_model: bool = False,
                         path_params: tuple[str, ...] = ()) -> type[TaskFilterStage]:
    """Make `fn` a task filter recipes can name: a TaskFilterStage registered as `kind`."""
    cls = type(f"TaskFilter_{kind}", (TaskFilterStage,),
               {"name": kind, "fn": staticmethod(fn), "check": staticmethod(check), "needs_model": needs_model,
                "path_params": path_params})
    return register_stage(cls)
