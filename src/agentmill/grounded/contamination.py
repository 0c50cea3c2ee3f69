"""Contamination checks of grounded tasks against benchmark folders, reusing the recipe's
decontamination filter (13-word n-grams of the instruction, byte-identical files anywhere in the
task folder, workspace included), plus 13-grams of the workspace files' text against the
benchmark tasks' instructions."""

from __future__ import annotations

from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.grounded import readers
from agentmill.recipe.records import TaskEntry
from agentmill.recipe.stages.task_filters.decontaminate import Params, build_index, ngrams, verdict
from agentmill.tasks import load_task


def check(task_dirs: list[Path], benchmarks: list[str], *, ngram: int = 13) -> dict[str, str]:
    """task folder -> reason, for every contaminated task."""
    params = Params(benchmarks=benchmarks, ngram=ngram)
    index = build_index(params)
    empty = [n for n in index.notes if n.endswith(": no tasks loaded")]
    if empty or not index.labels:  # nothing to compare against is not "clean"
        broken = [n for n in index.notes if "broken task skipped" in n][:3]
        raise AgentmillError("; ".join(empty + broken) or f"no benchmark tasks loaded from {', '.join(benchmarks)}")
    found: dict[str, str] = {}
    for d in task_dirs:
        task = load_task(d)
        entry = TaskEntry(
            name=task.name,
            path=str(task.path),
            source="grounded",
            content_hash=task.content_hash,
            instruction=task.instruction,
        )
        reason, _ = verdict(entry, params, index)
        if reason is None:
            reason = _workspace_ngrams(task.path / "environment" / "workspace", params, index)
        if reason:
            found[str(d)] = reason
    return found


def _workspace_ngrams(ws: Path, params: Params, index) -> str | None:
    for f in sorted(p for p in ws.rglob("*") if p.is_file() and p.suffix.lower() in readers.READABLE):
        try:
            grams = ngrams(readers.plain_text(f), params.ngram)
        except readers.UnreadableFile:
            continue
        for g in grams:
            if g in index.by_ngram:
                return f"workspace file {f.relative_to(ws)} shares a {params.ngram}-word n-gram with benchmark task {index.labels[index.by_ngram[g][0]]}"
    return None
