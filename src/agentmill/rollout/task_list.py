"""Task references spilled to disk. `rollout` reads its tasks twice before any trial runs (the
check for edited tasks before a model server starts, then the plan), and the driver must not hold
one object per task meanwhile: the references live in a private temporary SQLite database, which
keeps a bounded page cache in memory and the rest in a file deleted when it closes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from agentmill.rollout.ledger import rowid_pages
from agentmill.rollout.plan import TaskRef

PAGE = 512  # references read back at a time
CACHE_KIB = 256  # SQLite's page cache (its default, 2,000 KiB, would be the bulk of a large list's cost)


class TaskList:
    """An ordered, re-iterable collection of `TaskRef`s, in insertion order, duplicates included
    (a byte-identical duplicate's name is recorded by the run; its trials are the earlier task's)."""

    def __init__(self) -> None:
        # "": SQLite's private temporary database (in memory up to its cache size, then on disk)
        self.db = sqlite3.connect("", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=OFF")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self.db.execute(
            "CREATE TABLE refs (name TEXT, path TEXT, content_hash TEXT, allow_internet INTEGER, duplicate INTEGER)"
        )
        self.db.execute("CREATE INDEX refs_hash ON refs(content_hash)")
        self.distinct = 0

    def add(self, ref: TaskRef) -> bool:
        """Keep `ref`; False when a byte-identical task (same content hash) was added before."""
        seen = self.db.execute("SELECT 1 FROM refs WHERE content_hash=? LIMIT 1", (ref.content_hash,)).fetchone()
        self.db.execute(
            "INSERT INTO refs VALUES (?, ?, ?, ?, ?)",
            (ref.name, ref.path, ref.content_hash, ref.allow_internet, seen is not None),
        )
        self.distinct += seen is None
        return seen is None

    def __len__(self) -> int:
        """The distinct tasks: what the plan holds trials of."""
        return self.distinct

    def __iter__(self) -> Iterator[TaskRef]:
        def page(last: int) -> list:
            return self.db.execute(
                "SELECT rowid, name, path, content_hash, allow_internet FROM refs WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (last, PAGE),
            ).fetchall()

        for _, name, path, content_hash, internet in rowid_pages(page):
            yield TaskRef(name, path, content_hash, bool(internet))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> TaskList:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
