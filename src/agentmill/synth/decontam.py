"""Leakage into evaluation: synthesised tasks must stay apart from the tasks the target is evaluated on.

The diagnosis set (`[diagnosis] tasks`) is the target's evaluation set, and cards are written from it;
every folder in `synth.benchmarks` is evaluation data too. A candidate that shares a 13-word n-gram of
its request with one of those tasks, or carries a byte-identical copy of one of their files, is
refused by the `contamination` gate (gates/contamination.py) before it can be accepted, and
`agentmill synth decontaminate OUT --benchmark DIR` checks an output folder's accepted tasks against
benchmarks named after the run (writing OUT/contamination.json). Both use the recipe's decontamination
filter (recipe/stages/task_filters/decontaminate.py), not a copy of it.

Files every task of a gym shares are left out of the identical-file check: the gym itself (a `gym_dir`
is copied into each task) and the system prompt (a gym's tasks share it by design).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentmill.recipe.records import TaskEntry
from agentmill.recipe.stages.task_filters.decontaminate import Params, build_index, verdict
from agentmill.runtime.atomic import write_text_atomic
from agentmill.tasks.model import Task

SHARED_FILES = ["task.toml", "environment/Dockerfile", "environment/gym/*", "system.md"]
REPORT = "contamination.json"


def eval_sets(config) -> list[str]:
    """The folders a run's samples must not overlap: the diagnosis tasks and every named benchmark."""
    sets = [str(p) for p in config.synth.benchmarks]
    if config.diagnosis is not None and config.diagnosis.tasks.exists():
        sets.insert(0, str(config.diagnosis.tasks))
    return sets


def params(benchmarks: list[str], ngram: int = 13) -> Params:
    return Params(benchmarks=benchmarks, ngram=ngram, ignore_files=SHARED_FILES)


class Checker:
    """The benchmark index, built once; `overlap(task)` names the benchmark task a task overlaps, if any."""

    def __init__(self, benchmarks: list[str], ngram: int = 13):
        self.params = params(benchmarks, ngram)
        self.index = build_index(self.params)

    @property
    def indexed(self) -> int:
        return len(self.index.labels)

    def overlap(self, task: Task) -> str | None:
        entry = TaskEntry(
            name=task.name,
            path=str(task.path),
            source="synth",
            content_hash=task.content_hash,
            instruction=task.instruction,
        )
        reason, _ = verdict(entry, self.params, self.index)
        return reason


def check_output(out: Path, benchmarks: list[str], ngram: int = 13) -> dict:
    """Every accepted task of a synth output folder against the benchmarks; the report is written to
    OUT/contamination.json and returned."""
    from agentmill.synth.output import tasks_dir
    from agentmill.tasks.tool_task import load_tool_task

    checker = Checker(benchmarks, ngram)
    overlaps = {}
    folders = (
        sorted(p for p in tasks_dir(out).iterdir() if p.is_dir() and not p.name.startswith("."))
        if tasks_dir(out).is_dir()
        else []
    )
    for folder in folders:
        reason = checker.overlap(load_tool_task(folder))
        if reason:
            overlaps[folder.name] = reason
    report = {
        "benchmarks": benchmarks,
        "ngram": ngram,
        "benchmark_tasks": checker.indexed,
        "checked": len(folders),
        "overlaps": overlaps,
        "notes": checker.index.notes,
    }
    write_text_atomic(Path(out) / REPORT, json.dumps(report, indent=1) + "\n")
    return report
