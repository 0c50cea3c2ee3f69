"""A dataset is a folder of task folders. Loading reports every broken task and keeps the good ones."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from agentmill.errors import TaskError
from agentmill.tasks.io import load_task
from agentmill.tasks.model import Task


@dataclass
class Dataset:
    root: Path
    tasks: list[Task] = field(default_factory=list)
    errors: list[TaskError] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return [w for t in self.tasks for w in t.warnings]


def load_dataset(root: Path | str, *, names: list[str] | None = None) -> Dataset:
    """Load every task folder under `root` (or `root` itself if it is a task). Never raises per task."""
    ds = Dataset(root=Path(root).resolve())
    for loaded in iter_dataset(root, names=names):
        if isinstance(loaded, TaskError):
            ds.errors.append(loaded)
        else:
            ds.tasks.append(loaded)
    return ds


def iter_dataset(root: Path | str, *, names: list[str] | None = None) -> Iterator[Task | TaskError]:
    """Each task folder under `root` (or `root` itself), loaded one at a time: the task, or the error
    naming what is wrong with it. Raises only when `root` is not a folder."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise TaskError(root, "dataset folder not found")
    if _looks_like_task(root):
        parent, folders = root.parent, [root.name]
    else:  # names, not Path objects: the listing of a large dataset costs 64 bytes a task, not 350
        parent = root
        folders = sorted(e.name for e in os.scandir(root) if not e.name.startswith(".") and e.is_dir())
    if names:
        wanted = set(names)
        folders = [n for n in folders if n in wanted]
    for name in folders:
        try:
            yield load_task(parent / name)
        except TaskError as e:
            yield e


def _looks_like_task(path: Path) -> bool:
    return any((path / f).exists() for f in ("task.toml", "instruction.md", "task.yaml"))


def sample_dataset_path() -> Path:
    """The bundled sample tasks shipped inside the package."""
    return Path(str(resources.files("agentmill") / "tasks" / "sample"))


def sample_tools_path() -> Path:
    """The bundled tool tasks (itsm and collab gyms, SQL-state verifiers) shipped inside the package."""
    return Path(str(resources.files("agentmill") / "tasks" / "sample_tools"))
