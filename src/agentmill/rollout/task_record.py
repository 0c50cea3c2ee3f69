"""Which content each task name had when this run folder planned it, and the edits a resume finds.

The record is the ledger's `tasks` table (a folder written before it kept the record in
config.json's `task_hashes`; the next run migrates it into the ledger). Runs grow: a task added
extends the plan and one left out keeps its record, but a name found with other content (an edited
task) is refused before any trial runs, its finished trials being another task's.
"""

from __future__ import annotations

import sqlite3
from bisect import insort
from collections.abc import Iterable
from pathlib import Path


def task_name(task) -> str:
    """The name a task's content hash is recorded under (the recipe's rollout records name@hash)."""
    return task.name


class Edited:
    """The edited tasks found so far: a count and the first names in order (never all of them)."""

    SHOWN = 5

    def __init__(self) -> None:
        self.count = 0
        self.first: list[str] = []

    def add(self, name: str) -> None:
        self.count += 1
        insort(self.first, name)
        del self.first[self.SHOWN :]

    def changes(self) -> list[str]:
        """The refusal's words, as `RolloutConfig.identity_changes` says the others ([] if none)."""
        if not self.count:
            return []
        shown = ", ".join(self.first) + (" ..." if self.count > self.SHOWN else "")
        return [f"tasks: {self.count} edited since the run began ({shown})"]


def find_edits(ledger_path: Path, legacy: dict[str, str], tasks: Iterable[tuple[str, str]]) -> Edited:
    """The tasks, (name, content hash), recorded in the folder with other content, read without
    writing (the run folder may belong to another process, or the resume be refused): the ledger's
    record, else the `legacy` one of an older config.json."""
    edited = Edited()
    db = None
    if ledger_path.exists():
        db = sqlite3.connect(ledger_path, timeout=30)
        db.execute("PRAGMA query_only=1")
        if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='tasks'").fetchone() is None:
            db.close()
            db = None
    try:
        for name, content_hash in tasks:
            row = db.execute("SELECT task_hash FROM tasks WHERE name=?", (name,)).fetchone() if db else None
            recorded = row[0] if row else legacy.get(name)
            if recorded is not None and recorded != content_hash:
                edited.add(name)
    finally:
        if db is not None:
            db.close()
    return edited
