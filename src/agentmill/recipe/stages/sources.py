"""Stage 1, task sources: every source's tasks as TaskEntry records; broken tasks reported and skipped."""

from __future__ import annotations

from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.schema import Recipe, Source
from agentmill.tasks import load_dataset, sample_dataset_path
from agentmill.tasks.hashing import hash_text


def source_path(recipe: Recipe, source: Source):
    return sample_dataset_path() if source.sample else recipe.resolve(source.path)


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
            tasks.append(TaskEntry(name=f"{s.name}/{t.name}", path=str(t.path), source=s.name,
                                   content_hash=t.content_hash, instruction=t.instruction))
    report.count_out = len(tasks)
    return tasks, report
