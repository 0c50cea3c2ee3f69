"""Grounded tasks as a recipe source: the admitted task folders of a ground store."""

from __future__ import annotations

from pathlib import Path

from agentmill.errors import AgentmillError


def grounded_tasks_dir(store_dir: Path | str) -> Path:
    """The folder of admitted tasks, for `[[sources]] kind = "grounded"` (registered as an entry point)."""
    load_grounded_tasks(store_dir)  # one clear error when the folder is not a ground store
    return Path(store_dir).expanduser() / "tasks"


def load_grounded_tasks(store_dir: Path | str) -> list[Path]:
    """Admitted task folders under `<store>/tasks/`, sorted by name. Each is a plain Harbor task
    folder (instruction.md, task.toml with [metadata] source = "grounded", environment/, tests/)."""
    root = Path(store_dir).expanduser() / "tasks"
    if not root.is_dir():
        raise AgentmillError(f"{store_dir}: not a ground store (no tasks/ folder)")
    return sorted(
        p for p in root.iterdir() if p.is_dir() and (p / "instruction.md").is_file() and (p / "task.toml").is_file()
    )
