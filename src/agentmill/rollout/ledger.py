"""The run ledger: one SQLite database (WAL) per run folder, one row per trial.

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
CREATE TABLE IF NOT EXISTS plan (
    trial_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    attempt INTEGER NOT NULL
);
"""


class Ledger:
    def __init__(self, path: Path):
        self.path = path
        # Rows are started on the event loop and finished in its file threads (with the trial's
        # folder, as one step): one connection, one writer at a time.
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.writing = threading.Lock()
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

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

    def set_plan(self, plans: list[tuple[str, str, int]]) -> None:
        """Record the trials this invocation plans, (trial_id, task, attempt): `status` shows the total."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("DELETE FROM plan")
            self.db.executemany("INSERT OR REPLACE INTO plan (trial_id, task, attempt) VALUES (?, ?, ?)", plans)

    def planned(self) -> int | None:
        n = self.db.execute("SELECT COUNT(*) FROM plan").fetchone()[0]
        return n or None

    def forget(self, trial_ids: list[str]) -> None:
        self.db.executemany("DELETE FROM trials WHERE trial_id=?", [(t,) for t in trial_ids])

    def rows(self) -> list[dict]:
        cur = self.db.execute("SELECT * FROM trials ORDER BY task, attempt")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur]

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
