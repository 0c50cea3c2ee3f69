"""Find tasks by content hash in dataset folders named at training time.

RL rows carry a task's content hash, never a path: the rows travel to the training machine and
the tasks are found there, in whatever folders the trainer is told about. A task whose files
changed has another hash and is not found (its reward would no longer be the one the row was made
for); the error names the hash and every folder searched.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from agentmill.errors import AgentmillError, TaskError
from agentmill.tasks.io import load_task
from agentmill.tasks.model import Task

TASKS_ENV = "AGENTMILL_RL_TASKS"  # folders to search, separated by os.pathsep, when none are given
TASK_MARKERS = ("task.toml", "instruction.md", "task.yaml")
MAX_DEPTH = 4  # a dataset, a recipe run's task store, a few levels of grouping


class TaskNotFound(AgentmillError):
    """No task with this content hash in the folders searched."""


class TaskResolver:
    """task hash -> Task over one or more folders; folders are scanned once, on first use."""

    def __init__(self, roots: list[Path | str]):
        if not roots:
            raise AgentmillError(f"no task folders to resolve RL rows from: pass tasks=[...] or set {TASKS_ENV}")
        self.roots = [Path(r).resolve() for r in roots]
        for root in self.roots:
            if not root.is_dir():
                raise AgentmillError(f"{root}: task folder not found")
        self._index: dict[str, Task] | None = None
        self.errors: list[TaskError] = []  # broken task folders met while scanning: reported, skipped
        self._lock = threading.Lock()

    def resolve(self, task_hash: str) -> Task:
        task = self.index().get(task_hash)
        if task is None:
            raise TaskNotFound(
                f"no task with content hash {task_hash[:16]}... in {', '.join(map(str, self.roots))} "
                f"({len(self.index())} tasks; a task whose files changed has a new hash)"
            )
        return task

    def index(self) -> dict[str, Task]:
        with self._lock:
            if self._index is None:
                self._index = {}
                for folder in (f for root in self.roots for f in task_folders(root)):
                    try:
                        task = load_task(folder)
                    except TaskError as e:
                        self.errors.append(e)
                        continue
                    self._index.setdefault(task.content_hash, task)
            return self._index


def task_folders(root: Path, depth: int = 0):
    """Every task folder under root (a task folder is not searched further; hidden folders are skipped)."""
    if any((root / m).exists() for m in TASK_MARKERS):
        yield root
        return
    if depth >= MAX_DEPTH:
        return
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))
    except OSError:
        return
    for child in children:
        yield from task_folders(child, depth + 1)


def roots_from(tasks: Sequence[Path | str] | Path | str | None) -> list[Path]:
    """The folders to search: the ones given, else $AGENTMILL_RL_TASKS."""
    if tasks is None or tasks == [] or tasks == "":
        tasks = [p for p in os.environ.get(TASKS_ENV, "").split(os.pathsep) if p]
    elif isinstance(tasks, (str, Path)):
        tasks = [tasks]
    return [Path(t) for t in tasks]


_resolvers: dict[tuple[Path, ...], TaskResolver] = {}
_resolvers_lock = threading.Lock()


def shared_resolver(tasks: Sequence[Path | str] | Path | str | None) -> TaskResolver:
    """One resolver per set of folders per process: a reward function called per sample scans once."""
    roots = tuple(p.resolve() for p in roots_from(tasks))
    with _resolvers_lock:
        if roots not in _resolvers:
            _resolvers[roots] = TaskResolver(list(roots))
        return _resolvers[roots]
