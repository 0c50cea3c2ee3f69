"""Task kinds: adding one is one module plus one `register_kind(...)` call.

A kind says whether a folder is one of its tasks (`detect`), reads it into the one Task record
(`load`) and names its behaviour in a trial (`behaviour`: prepare, verify, oracle, audit). `load_task` asks each kind in registration order, the fallbacks (plain Harbor and
Terminal-Bench folders, which claim any task.toml/task.yaml) last; the first that claims it wins.
This registry imports no loader: `builtin_kinds.py` registers the bundled kinds, and the package face
(`agentmill/tasks/__init__.py`) imports it, so they are registered before any caller asks.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentmill.registry import Registry
from agentmill.tasks.model import Task


@dataclass(frozen=True)
class TaskKind:
    name: str
    detect: Callable[[Path], bool]
    load: Callable[[Path], Task]
    fallback: bool = False  # asked after every specific kind
    # What the kind does in a trial: a "module:attr" naming a KindBehaviour (rollout/behaviours/), imported
    # when a trial first needs it (tasks sit below rollout); None behaves as a terminal task.
    behaviour: str | None = None


# Registered in order: `task_kinds()` asks the specific kinds first, the fallbacks last.
KINDS: Registry[TaskKind] = Registry("task kind", group="agentmill.task_kinds")


def register_kind(kind: TaskKind) -> TaskKind:
    return KINDS.register(kind.name, kind)


def unregister_kind(name: str) -> None:
    """For tests that register a throwaway kind."""
    KINDS.unregister(name)


def task_kinds() -> list[TaskKind]:
    kinds = list(KINDS.all().values())
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
