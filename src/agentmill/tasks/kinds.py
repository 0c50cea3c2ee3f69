"""Task kinds: adding one is one module plus one `register_kind(...)` call.

A kind says whether a folder is one of its tasks (`detect`) and reads it into the one Task record
(`load`). `load_task` asks each kind in registration order, the fallbacks (plain Harbor and
Terminal-Bench folders, which claim any task.toml/task.yaml) last; the first that claims it wins.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentmill.tasks.model import Task


@dataclass(frozen=True)
class TaskKind:
    name: str
    detect: Callable[[Path], bool]
    load: Callable[[Path], Task]
    fallback: bool = False  # asked after every specific kind


_KINDS: dict[str, TaskKind] = {}
_BUILTIN_LOADED = False


def register_kind(kind: TaskKind) -> TaskKind:
    existing = _KINDS.get(kind.name)
    if existing is not None and existing != kind:
        raise ValueError(f"task kind '{kind.name}' is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister_kind(name: str) -> None:
    """For tests that register a throwaway kind."""
    _KINDS.pop(name, None)


def task_kinds() -> list[TaskKind]:
    _load_builtin()
    kinds = list(_KINDS.values())
    return [k for k in kinds if not k.fallback] + [k for k in kinds if k.fallback]


def kind_names() -> list[str]:
    return [k.name for k in task_kinds()]


def declared_kind(root: Path) -> str | None:
    """`[environment] kind` of a folder's task.toml, or None (no file, unreadable, not set)."""
    try:
        raw = tomllib.loads((root / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    env = raw.get("environment")
    kind = env.get("kind") if isinstance(env, dict) else None
    return kind if isinstance(kind, str) else None


def _load_builtin() -> None:
    global _BUILTIN_LOADED
    if _BUILTIN_LOADED:
        return
    _BUILTIN_LOADED = True
    from agentmill.tasks import io, terminal_bench, tool_task

    extra = dict(_KINDS)  # kinds registered before the built-ins keep their place after "tools"
    _KINDS.clear()

    register_kind(TaskKind("tools", lambda root: declared_kind(root) == "tools", tool_task.load_tool_task))
    register_kind(TaskKind("terminal", lambda root: (root / "task.toml").exists() or (root / "instruction.md").exists(),
                           io.load_harbor, fallback=True))
    register_kind(TaskKind("terminal-bench", lambda root: (root / "task.yaml").exists(),
                           terminal_bench.load_terminal_bench, fallback=True))
    _KINDS.update({k: v for k, v in extra.items() if k not in _KINDS})
