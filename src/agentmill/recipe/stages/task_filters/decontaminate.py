"""Drop tasks that overlap a benchmark: shared word n-grams in the instruction, or identical files.

Training on a benchmark's tasks inflates its scores; a task that shares a long word sequence with a
benchmark instruction, or carries a byte-identical copy of one of its files (test data, a test
script, a solution), is removed, and the reason names the benchmark task.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from agentmill.errors import AgentmillError
from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.stages.task_filters.base import (
    FilterContext,
    FilterParams,
    bad_param,
    copy_entry,
    parse_params,
    report,
    words,
)
from agentmill.tasks import load_dataset
from agentmill.tasks.hashing import hash_file

KIND = "decontaminate"
_SKIP_DIRS = {".git", "__pycache__"}
_SKIP_FILES = {".DS_Store"}


class Params(FilterParams):
    benchmarks: list[str] = Field(min_length=1)  # benchmark dataset folders, or single task folders
    ngram: int = Field(13, ge=1)
    min_overlap: int = Field(1, ge=1)  # shared n-grams with one benchmark task that count as contamination
    # Files left out of the identical-file check: boilerplate that unrelated tasks share verbatim.
    ignore_files: list[str] = Field(default_factory=lambda: ["task.toml", "environment/Dockerfile"])
    min_file_bytes: int = Field(32, ge=0)  # smaller files (empty, "ok\n") match by chance


@dataclass
class _Index:
    labels: list[str] = field(default_factory=list)  # benchmark task labels, by index
    by_ngram: dict[tuple[str, ...], list[int]] = field(default_factory=dict)
    by_file: dict[str, tuple[int, str]] = field(default_factory=dict)  # sha256 -> (first task, its path)
    notes: list[str] = field(default_factory=list)


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    toks = words(text)
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def task_files(root: Path, p: Params) -> dict[str, str]:
    """sha256 -> relative path of every regular file in a task folder the file check looks at."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if name in _SKIP_FILES or full.is_symlink() or not full.is_file():
                continue
            if any(fnmatch.fnmatchcase(rel, pat) for pat in p.ignore_files):
                continue
            if full.stat().st_size < p.min_file_bytes:
                continue
            out.setdefault(hash_file(full), rel)
    return out


def build_index(p: Params) -> _Index:
    index = _Index()
    for spec in p.benchmarks:
        try:
            ds = load_dataset(Path(spec).expanduser())
        except AgentmillError as e:
            raise bad_param(KIND, "benchmarks", str(e)) from None
        index.notes += [f"benchmark {spec}: broken task skipped: {e}" for e in ds.errors]
        if not ds.tasks:
            index.notes.append(f"benchmark {spec}: no tasks loaded")
        single = len(ds.tasks) == 1 and ds.tasks[0].path == ds.root
        for task in ds.tasks:
            idx = len(index.labels)
            index.labels.append(task.name if single else f"{ds.root.name}/{task.name}")
            for g in ngrams(task.instruction, p.ngram):
                index.by_ngram.setdefault(g, []).append(idx)
            for digest, rel in task_files(task.path, p).items():
                index.by_file.setdefault(digest, (idx, rel))
    return index


def verdict(task: TaskEntry, p: Params, index: _Index) -> tuple[str | None, str | None]:
    """(drop reason or None, note or None) for one task."""
    shared: dict[int, int] = {}
    for g in ngrams(task.instruction, p.ngram):
        for idx in index.by_ngram.get(g, ()):
            shared[idx] = shared.get(idx, 0) + 1
    hits = [(n, idx) for idx, n in shared.items() if n >= p.min_overlap]
    if hits:
        n, idx = min(hits, key=lambda item: (-item[0], item[1]))  # the most shared, then the first indexed
        return (
            f"n-gram match with benchmark task {index.labels[idx]}: "
            f"{n} shared {p.ngram}-word n-gram{'s' if n != 1 else ''}"
        ), None
    root = Path(task.path)
    if not root.is_dir():
        return None, f"{task.name}: task folder {task.path} not found; file check skipped"
    for digest, rel in task_files(root, p).items():
        if digest in index.by_file:
            idx, brel = index.by_file[digest]
            return f"file match with benchmark task {index.labels[idx]}: {rel} is identical to its {brel}", None
    return None, None


async def decontaminate(
    tasks: list[TaskEntry], params: dict, ctx: FilterContext
) -> tuple[list[TaskEntry], StageReport]:
    p = parse_params(KIND, Params, params)
    index = await asyncio.to_thread(build_index, p)
    notes = [f"{len(index.labels)} benchmark task(s) indexed", *index.notes]
    verdicts = await asyncio.to_thread(lambda: [verdict(t, p, index) for t in tasks])
    kept: list[TaskEntry] = []
    dropped: list[Drop] = []
    for task, (reason, note) in zip(tasks, verdicts):
        if note:
            notes.append(note)
        if reason:
            dropped.append(Drop(name=task.name, reason=reason))
        else:
            kept.append(copy_entry(task))
    return kept, report(KIND, tasks, kept, dropped, notes)
