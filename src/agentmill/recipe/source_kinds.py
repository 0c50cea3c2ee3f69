"""Kinds of recipe source beyond a plain folder of task folders: the output folder of a task
producer, whose tasks live somewhere inside it (`kind = "grounded"`: an `agentmill ground` store;
`kind = "synth"`: an `agentmill synth run` output folder), or a generator's input (`functions`,
`repo_bugs`, ...: agentmill/sources/), turned into task folders once and cached.

The bundled producers are built in (imported only when a recipe names them); a plug-in package adds
its own through the `agentmill.task_sources` entry-point group (name = the kind, value = a function
from the output folder to its folder of task folders, raising AgentmillError when it is not one). A
source's `params` table, when given, is passed as the function's second argument (generators' options).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.registry import Registry

PLAIN = "harbor"  # a folder of task folders, read as it is

# kind -> a function from the producer's output folder to its folder of task folders (raising
# AgentmillError when the folder is not one). Plug-ins declare `agentmill.task_sources`.
SOURCE_KINDS: Registry[Callable[[Path], Path]] = Registry(
    "source kind",
    group="agentmill.task_sources",
    builtins={
        "grounded": "agentmill.grounded.source:grounded_tasks_dir",
        "synth": "agentmill.synth.source:synth_tasks_dir",
        # the task-source generators (docs/sources.md)
        "functions": "agentmill.sources.functions:functions_tasks_dir",
        "repo_bugs": "agentmill.sources.repo_bugs:repo_bugs_tasks_dir",
        "stackexchange": "agentmill.sources.stackexchange:stackexchange_tasks_dir",
        "generate": "agentmill.sources.generate:generate_tasks_dir",
    },
)
SOURCE_KINDS.register(PLAIN, lambda path: path)


def source_kinds() -> list[str]:
    return SOURCE_KINDS.names()


def tasks_folder(kind: str, path: Path | None, params: dict[str, Any] | None = None) -> Path:
    """Where the tasks of a source of this kind live (one clear error when `path` is not one)."""
    resolve: Callable[..., Path] = SOURCE_KINDS.get(kind)
    if kind == PLAIN and params:
        raise AgentmillError(f"a source of kind {PLAIN!r} takes no params")
    return resolve(path, params) if params else resolve(path)
