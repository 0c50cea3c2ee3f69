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
        scope = {"sources": self.spec.sources, "per_source": self.spec.per_source, "placement": self.spec.placement}
        scoped = {k: v for k, v in scope.items() if v not in ([], False, "before_mix")}  # defaults keep old cache keys
        return {
            "kind": self.name,
            "params": self.params,
            "model": model_identity(self.model) if self.model else None,
            "prompts": self._prompt_digest(),
            **scoped,
        }

    def describe(self) -> str:
        return f"task filter {self.name}"

    async def run(self, records, ctx: StageContext):
        tasks = [t async for t in records]
        scope = set(self.spec.sources)
        inside = [t for t in tasks if not scope or t.source in scope]
        groups = _by_source(inside) if self.spec.per_source else [inside]
        kept: list[TaskEntry] = []
        if self.model is not None:
            async with ctx.use_model(self.model) as model:
                for group in groups:
                    kept += await self._filter(group, ctx, model)
        else:
            for group in groups:
                kept += await self._filter(group, ctx, None)
        for t in _in_order(tasks, inside, kept):
            yield t

    async def _filter(self, tasks: list[TaskEntry], ctx: StageContext, model) -> list[TaskEntry]:
        if not tasks:
            return []
        kept, report = await type(self).fn(tasks, self.params, self._context(ctx, model))
        ctx.report.dropped += report.dropped
        if self.spec.per_source:
            ctx.report.notes += [f"{tasks[0].source}: {note}" for note in report.notes]
        else:
            ctx.report.notes += report.notes
        return kept

    def _context(self, ctx: StageContext, model) -> FilterContext:
        return FilterContext(
            model=model,
            builder=ctx.builder,
            workdir=ctx.out,
            prompts_dir=self.prompts_dir if model is not None else None,
        )

    def _prompt_digest(self) -> str | None:
        if not self.needs_model:
            return None
        h = hashlib.sha256()
        for folder in [PACKAGED_PROMPTS] + ([self.prompts_dir] if self.prompts_dir else []):
            for p in sorted(Path(folder).glob("*.md")) if Path(folder).is_dir() else []:
                h.update(p.name.encode() + b"\0" + p.read_bytes())
        return h.hexdigest()[:16]


def _by_source(tasks: list[TaskEntry]) -> list[list[TaskEntry]]:
    groups: dict[str, list[TaskEntry]] = {}
    for t in tasks:
        groups.setdefault(t.source, []).append(t)
    return list(groups.values())


def _in_order(tasks: list[TaskEntry], inside: list[TaskEntry], kept: list[TaskEntry]) -> list[TaskEntry]:
    """The tasks outside the filter's scope untouched, in place; each kept task where it stood (task names
    are unique in a set; a filter may hand back an updated copy, e.g. with scores)."""
    if len(inside) == len(tasks):
        return kept  # the whole set was filtered: its own order (a filter may rank)
    scoped = {t.name for t in inside}
    by_name = {t.name: t for t in kept}
    out = [
        t if t.name not in scoped else by_name.pop(t.name) for t in tasks if t.name not in scoped or t.name in by_name
    ]
    return out + list(by_name.values())


def register_task_filter(
    kind: str,
    fn: FilterFn,
    check: Callable[[dict], Any],
    *,
    needs_model: bool = False,
    path_params: tuple[str, ...] = (),
) -> type[TaskFilterStage]:
    """Make `fn` a task filter recipes can name: a TaskFilterStage registered as `kind`."""
    cls: type[TaskFilterStage] = type(
        f"TaskFilter_{kind}",
        (TaskFilterStage,),
        {
            "name": kind,
            "fn": staticmethod(fn),
            "check": staticmethod(check),
            "needs_model": needs_model,
            "path_params": path_params,
        },
    )
    return register_stage(cls)
