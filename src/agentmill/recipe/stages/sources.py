"""Stage 1, task sources: every source's tasks as TaskEntry records; broken tasks reported and skipped."""

from __future__ import annotations

from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.schema import Recipe, Source
from agentmill.recipe.source_kinds import tasks_folder
from agentmill.recipe.stage import Stage, StageContext, register_stage
from agentmill.tasks import load_dataset, sample_dataset_path
from agentmill.tasks.hashing import hash_text


def source_path(recipe: Recipe, source: Source):
    if source.sample:
        return sample_dataset_path()
    # a producer's output folder, or a generator's input and options: its tasks
    return tasks_folder(source.kind, recipe.resolve(source.path), source.params or None)


def source_fingerprint(recipe: Recipe) -> str:
    """Content of every source: part of the first stage's key, so editing a task invalidates the cache."""
    parts = []
    for s in recipe.sources:
        ds = load_dataset(source_path(recipe, s), names=s.tasks or None)
        parts.append(s.name + ":" + ",".join(sorted(t.content_hash for t in ds.tasks)))
    return hash_text(*parts)


def load_sources(recipe: Recipe) -> tuple[list[TaskEntry], StageReport]:
    report = StageReport(stage="sources", kind="sources")
    tasks: list[TaskEntry] = []
    for s in recipe.sources:
        ds = load_dataset(source_path(recipe, s), names=s.tasks or None)
        report.count_in += len(ds.tasks) + len(ds.errors)
        report.dropped += [Drop(name=str(e.path), reason=f"broken task: {e.problem}") for e in ds.errors]
        missing = set(s.tasks) - {t.name for t in ds.tasks} - {e.path.name for e in ds.errors}
        report.notes += [f"source '{s.name}': task '{m}' not found" for m in sorted(missing)]
        for t in ds.tasks:
            tasks.append(
                TaskEntry(
                    name=f"{s.name}/{t.name}",
                    path=str(t.path),
                    source=s.name,
                    content_hash=t.content_hash,
                    instruction=t.instruction,
                )
            )
    report.count_out = len(tasks)
    return tasks, report


@register_stage
class Sources(Stage):
    """Every source's tasks; broken tasks are reported and skipped."""

    name = kind = "sources"
    consumes, produces = None, "tasks"

    def __init__(self, recipe: Recipe):
        self.recipe, self.step = recipe, "sources"

    def settings(self):
        # the tasks' content is part of the key: editing a task reruns everything after it
        return {"sources": [s.model_dump() for s in self.recipe.sources], "content": source_fingerprint(self.recipe)}

    def describe(self) -> str:
        return f"{len(self.recipe.sources)} sources"

    async def run(self, records, ctx: StageContext):
        tasks, report = load_sources(self.recipe)
        ctx.report.count_in = report.count_in
        ctx.report.dropped += report.dropped
        ctx.report.notes += report.notes
        for t in tasks:
            yield t
