"""The run ledger: one SQLite database (WAL) per run folder, one row per trial.

It also holds the run's per-task state, so the driver holds none: `tasks`, every task name this
folder has planned with its content hash (a resume that finds a name with another hash is refused,
even after a run that left the task out), and `plan`, the trials of the last invocation.

Exactly-once: a trial's folder is written to a temporary name and renamed into place, then its row
is marked done, both in one step an interrupt cannot split (whole_steps). On resume, a row still
'running' (the process died) whose folder exists is recovered from the folder; one without a folder
is run again. So a kill -9 loses at most the trials in flight and never records one twice.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    trial_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    task_hash TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'done')),
    outcome TEXT,
    reward REAL,
    prompt_tokens INTEGER DEFAULT 0,
    completion_tokens INTEGER DEFAULT 0,
    cost_usd REAL,
    seconds REAL,
    exception TEXT,
    started_at REAL,
    finished_at REAL,
    runs INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS trials_state ON trials(state);
CREATE TABLE IF NOT EXISTS tasks (
    name TEXT PRIMARY KEY,
    task_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS plan (
    trial_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    task_hash TEXT,
    path TEXT
);
"""
# Columns added to `plan` since ledgers were first written (a resume of an older folder adds them):
# the runner reads the trials to run back from the plan, so it must know where each task lives.
PLAN_COLUMNS = {"task_hash": "TEXT", "path": "TEXT"}
PAGE = 512  # plan rows read at a time: the driver never holds the whole plan
# SQLite's page cache per connection, in KiB: it fills as the ledger grows (about 250 bytes a trial)
# up to this bound (SQLite's default is 2,000 KiB); the ledger's reads and writes touch few pages.
CACHE_KIB = 512


class Ledger:
    def __init__(self, path: Path):
        self.path = path
        # Rows are started on the event loop and finished in its file threads (with the trial's
        # folder, as one step): one connection, one writer at a time.
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.writing = threading.Lock()
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self.db.executescript(SCHEMA)
        have = {r[1] for r in self.db.execute("PRAGMA table_info(plan)")}
        for name, kind in PLAN_COLUMNS.items():
            if name not in have:
                self.db.execute(f"ALTER TABLE plan ADD COLUMN {name} {kind}")

    def close(self) -> None:
        self.db.close()

    def done_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT trial_id FROM trials WHERE state='done'")}

    def running_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT trial_id FROM trials WHERE state='running'")}

    def start(self, trial_id: str, task: str, task_hash: str, attempt: int) -> None:
        with self.writing:
            self.db.execute(
                "INSERT INTO trials (trial_id, task, task_hash, attempt, state, started_at) VALUES (?, ?, ?, ?, 'running', ?) "
                "ON CONFLICT(trial_id) DO UPDATE SET state='running', started_at=excluded.started_at, runs=runs+1, "
                "outcome=NULL, reward=NULL, exception=NULL",
                (trial_id, task, task_hash, attempt, time.time()),
            )

    def finish(self, trial_id: str, result: dict) -> None:
        """Mark done from a trial's result.json contents. Idempotent."""
        tokens = result.get("tokens", {})
        with self.writing:
            self.db.execute(
                "UPDATE trials SET state='done', outcome=?, reward=?, prompt_tokens=?, completion_tokens=?, cost_usd=?, "
                "seconds=?, exception=?, finished_at=? WHERE trial_id=?",
                (
                    result["outcome"],
                    result.get("reward"),
                    tokens.get("prompt", 0),
                    tokens.get("completion", 0),
                    result.get("cost_usd"),
                    result.get("timings", {}).get("total"),
                    result.get("exception"),
                    time.time(),
                    trial_id,
                ),
            )

    @contextmanager
    def planning(self, legacy: dict[str, str] | None = None) -> Iterator[PlanWriter]:
        """One invocation's plan, written in one transaction as the tasks stream through: the plan
        replaces the last one, the task names are recorded, and an exception (a refused resume, an
        interrupt) rolls all of it back. `legacy`: the task hashes of a config.json written before
        the ledger kept them, migrated here (a name the ledger already has keeps its hash)."""
        with self.writing:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if legacy:
                    self.db.executemany("INSERT OR IGNORE INTO tasks (name, task_hash) VALUES (?, ?)", legacy.items())
                self.db.execute("DELETE FROM plan")
                yield PlanWriter(self.db)
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def set_plan(self, plans: Iterable[tuple]) -> int:
        """Record the trials this invocation plans, (trial_id, task, attempt[, task_hash, path]), as
        they come (an iterator is never held whole): `status` shows the total. Returns the count."""
        with self.planning() as plan:
            for p in plans:
                plan.trial(*p)
        return self.db.execute("SELECT COUNT(*) FROM plan").fetchone()[0]

    def record_tasks(self, hashes: Iterable[tuple[str, str]]) -> None:
        """Record task names' content hashes (an import's), replacing what was recorded under those names."""
        with self.writing, self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT OR REPLACE INTO tasks (name, task_hash) VALUES (?, ?)", hashes)

    def planned(self) -> int | None:
        n = self.db.execute("SELECT COUNT(*) FROM plan").fetchone()[0]
        return n or None

    def unfinished_plan(self) -> Iterator[tuple[str, str, int, str | None, str | None]]:
        """The planned trials not done, in plan order, (trial_id, task, attempt, task_hash, path),
        read a page at a time (keyed on the row order, so rows finished meanwhile do not shift it)."""

        def page(last: int) -> list:
            with self.writing:  # trials finish in file threads on this connection meanwhile
                return self.db.execute(
                    "SELECT p.rowid, p.trial_id, p.task, p.attempt, p.task_hash, p.path FROM plan p "
                    "LEFT JOIN trials t ON t.trial_id = p.trial_id "
                    "WHERE p.rowid > ? AND (t.state IS NULL OR t.state != 'done') ORDER BY p.rowid LIMIT ?",
                    (last, PAGE),
                ).fetchall()

        for row in rowid_pages(page):
            yield row[1:]

    def unfinished_count(self) -> int:
        return self.db.execute(
            "SELECT COUNT(*) FROM plan p LEFT JOIN trials t ON t.trial_id = p.trial_id "
            "WHERE t.state IS NULL OR t.state != 'done'"
        ).fetchone()[0]

    def count(self, state: str | None = None) -> int:
        """Trials in the ledger (in `state`, when given)."""
        if state is None:
            return self.db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM trials WHERE state=?", (state,)).fetchone()[0]

    def done_with(self, outcomes: Iterable[str]) -> list[str]:
        """Ids of finished trials that ended in one of `outcomes`."""
        wanted = sorted(outcomes)
        marks = ",".join("?" * len(wanted))
        sql = f"SELECT trial_id FROM trials WHERE state='done' AND outcome IN ({marks})"
        return [r[0] for r in self.db.execute(sql, wanted)]

    def forget(self, trial_ids: list[str]) -> None:
        self.db.executemany("DELETE FROM trials WHERE trial_id=?", [(t,) for t in trial_ids])

    def rows(self) -> list[dict]:
        return list(self.iter_rows())

    def iter_rows(self, where: str = "", params: tuple = ()) -> Iterator[dict]:
        """Rows one at a time (a summary of a large run never holds them all); `where`: an SQL condition."""
        cur = self.db.cursor().execute(
            f"SELECT * FROM trials {'WHERE ' + where if where else ''} ORDER BY task, attempt", params
        )
        names = [d[0] for d in cur.description]
        for row in cur:
            yield dict(zip(names, row))

    def recover(self, trials_dir: Path) -> tuple[int, int]:
        """Settle rows left 'running' by a dead process: (recovered from folder, to rerun)."""
        recovered = rerun = 0
        for trial_id in self.running_ids():
            result = trials_dir / trial_id / "result.json"
            if result.exists():
                self.finish(trial_id, json.loads(result.read_text()))
                recovered += 1
            else:
                rerun += 1
        return recovered, rerun


class PlanWriter:
    """Writes inside `Ledger.planning`'s transaction: nothing is seen by others until it commits."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def task(self, name: str, task_hash: str) -> str | None:
        """Record `name` with its content hash. If the folder recorded another hash under that name
        (the task was edited since), record nothing and return the recorded hash."""
        row = self.db.execute("SELECT task_hash FROM tasks WHERE name=?", (name,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO tasks (name, task_hash) VALUES (?, ?)", (name, task_hash))
            return None
        return row[0] if row[0] != task_hash else None

    def trial(self, trial_id: str, task: str, attempt: int, task_hash: str | None = None, path: str | None = None):
        """Plan a trial. One planned already keeps its row: a byte-identical duplicate of an earlier
        task makes the same trial ids, and is left out that way (it would share the earlier task's trials)."""
        self.db.execute(
            "INSERT OR IGNORE INTO plan (trial_id, task, attempt, task_hash, path) VALUES (?, ?, ?, ?, ?)",
            (trial_id, task, attempt, task_hash, path),
        )

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM plan").fetchone()[0]


def rowid_pages(page: Callable[[int], list]) -> Iterator[tuple]:
    """Every row of a query read a page at a time: `page(last)` returns the rows after rowid `last`
    (the rowid first in each row), in rowid order; empty when done."""
    last = 0
    while rows := page(last):
        last = rows[-1][0]
        yield from rows
