"""Kinds of recipe source beyond a plain folder of task folders: the output folder of a task
producer, whose tasks live somewhere inside it (`kind = "grounded"`: an `agentmill ground` store;
`kind = "synth"`: an `agentmill synth run` output folder).

The bundled producers are built in (imported only when a recipe names them); a plug-in package adds
its own through the `agentmill.task_sources` entry-point group (name = the kind, value = a function
from the output folder to its folder of task folders, raising AgentmillError when it is not one).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentmill.registry import Registry

PLAIN = "harbor"  # a folder of task folders, read as it is

# kind -> a function from the producer's output folder to its folder of task folders (raising
# AgentmillError when the folder is not one). Plug-ins declare `agentmill.task_sources`.
SOURCE_KINDS: Registry[Callable[[Path], Path]] = Registry(
    "source kind", group="agentmill.task_sources",
    builtins={"grounded": "agentmill.grounded.source:grounded_tasks_dir",
              "synth": "agentmill.synth.source:synth_tasks_dir"})
SOURCE_KINDS.register(PLAIN, lambda path: path)


def source_kinds() -> list[str]:
    return SOURCE_KINDS.names()


def tasks_folder(kind: str, path: Path) -> Path:
    """Where the tasks of a source of this kind live (one clear error when `path` is not one)."""
    return SOURCE_KINDS.get(kind)(path)
