"""Kinds of recipe source beyond a plain folder of task folders: the output folder of a task
producer, whose tasks live somewhere inside it (`kind = "grounded"`: an `agentmill ground` store;
`kind = "synth"`: an `agentmill synth run` output folder), or a generator's input (`functions`,
`repo_bugs`, ...: agentmill/sources/), turned into task folders once and cached.

Producers register through the `agentmill.task_sources` entry-point group (name = the kind, value =
a function from the output folder to its folder of task folders, raising AgentmillError when the
folder is not one), so recipes import none of them and a plug-in package can add its own. A source's
`params` table, when given, is passed as the function's second argument (generators' options).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError

PLAIN = "harbor"  # a folder of task folders, read as it is
GROUP = "agentmill.task_sources"


@functools.cache  # read once: installed packages do not change under a running process
def _producers() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def source_kinds() -> list[str]:
    return sorted({PLAIN, *_producers()})


def tasks_folder(kind: str, path: Path | None, params: dict[str, Any] | None = None) -> Path:
    """Where the tasks of a source of this kind live (one clear error when `path` is not one)."""
    if kind == PLAIN:
        if params:
            raise AgentmillError(f"a source of kind {PLAIN!r} takes no params")
        return path
    found = _producers().get(kind)
    if found is None:
        raise AgentmillError(f"unknown source kind {kind!r} (known: {', '.join(source_kinds())})")
    resolve: Callable[..., Path] = found.load()
    return resolve(path, params) if params else resolve(path)
