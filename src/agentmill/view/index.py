"""The viewer's index of a rollout folder: the ledger's rows plus what the list filters on.

The ledger has one row per trial but not turns, tamper evidence or the export filters' verdict;
those live in each trial folder. The index (`view.sqlite` beside the ledger, or a temporary file
when the folder is read-only) copies the ledger's rows, reads each finished trial's small files
once, and keeps indexes, so a list page of a run with hundreds of thousands of trials is one
indexed query. It is a cache: deleting it loses nothing, and it follows a run still in progress.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agentmill.view.verdicts import FilterJudge

INDEX_VERSION = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS trials (
    trial_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    task_hash TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT,
    reward REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    tokens INTEGER,
    seconds REAL,
    exception TEXT,
    started_at REAL,
    finished_at REAL,
    -- read from the trial folder (NULL until read, or when the folder is missing)
    facts_of REAL,            -- the ledger's finished_at the facts were read for
    has_folder INTEGER,
    turns INTEGER,
    tamper INTEGER,
    tamper_kinds TEXT,
    filter_kept INTEGER,      -- 1 kept by the export filters, 0 dropped, NULL unknown
    filter_reason TEXT,       -- the first rule that dropped it (the funnel's reason)
    filters_failed TEXT,      -- every rule it fails, comma-separated
    facts_error TEXT          -- why the folder could not be read
);
CREATE INDEX IF NOT EXISTS trials_task ON trials(task, attempt, trial_id);
CREATE INDEX IF NOT EXISTS trials_hash ON trials(task_hash, attempt, trial_id);
CREATE INDEX IF NOT EXISTS trials_outcome ON trials(outcome, task, attempt, trial_id);
CREATE INDEX IF NOT EXISTS trials_reward ON trials(reward, trial_id);
CREATE INDEX IF NOT EXISTS trials_turns ON trials(turns, trial_id);
CREATE INDEX IF NOT EXISTS trials_tokens ON trials(tokens, trial_id);
CREATE INDEX IF NOT EXISTS trials_seconds ON trials(seconds, trial_id);
CREATE INDEX IF NOT EXISTS trials_finished ON trials(finished_at, trial_id);
CREATE INDEX IF NOT EXISTS trials_filter ON trials(filter_kept, filter_reason, task, attempt, trial_id);
CREATE INDEX IF NOT EXISTS trials_tamper ON trials(tamper, task, attempt, trial_id);
"""

LEDGER_COLUMNS = (
    "trial_id",
    "task",
    "task_hash",
    "attempt",
    "state",
    "outcome",
    "reward",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "exception",
    "started_at",
    "finished_at",
)


def index_path(run_dir: Path) -> Path:
    """`view.sqlite` in the run folder when it is writable, else a temporary file named after it."""
    if os.access(run_dir, os.W_OK):
        return run_dir / "view.sqlite"
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"agentmill-view-{digest}.sqlite"


class TrialIndex:
    """Keeps `view.sqlite` in step with a rollout folder's ledger and trial folders."""

    def __init__(self, run_dir: Path, judge: FilterJudge, *, path: Path | None = None, min_interval: float = 2.0):
        self.run_dir = run_dir
        self.ledger_path = run_dir / "ledger.sqlite"
        self.trials_dir = run_dir / "trials"
        self.path = path or index_path(run_dir)
        self.judge = judge
        self.min_interval = min_interval
        self._lock = threading.Lock()
        self._checked = 0.0
        try:
            self._prepare(judge)
        except sqlite3.DatabaseError:  # not a database (a torn copy, another file): it is only a cache
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self._prepare(judge)

    def _prepare(self, judge: FilterJudge) -> None:
        db = self.connect()
        try:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            if self._meta(db, "version") != str(INDEX_VERSION):  # made by another viewer version: start again
                db.execute("DROP TABLE IF EXISTS trials")
                db.execute("DELETE FROM meta")
            db.executescript(SCHEMA)
            self._set_meta(db, "version", str(INDEX_VERSION))
            if self._meta(db, "filters") != judge.key:  # another filter spec: every verdict is read again
                db.execute("UPDATE trials SET facts_of=NULL")
                self._set_meta(db, "filters", judge.key)
        finally:
            db.close()

    def connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.row_factory = sqlite3.Row
        return db

    def sync(self, *, force: bool = False, progress: Callable[[int, int], None] | None = None) -> int:
        """Bring the index up to date (at most once per `min_interval` unless forced); trials (re)read."""
        with self._lock:
            now = time.monotonic()
            if not force and now - self._checked < self.min_interval:
                return 0
            self._checked = now
            db = self.connect()
            try:
                self._copy_ledger(db)
                return self._read_facts(db, progress)
            finally:
                db.close()

    # ------------------------------------------------------------------ ledger rows

    def _copy_ledger(self, db: sqlite3.Connection) -> None:
        if not self.ledger_path.exists():
            return
        src = sqlite3.connect(f"file:{self.ledger_path.resolve()}?mode=ro", uri=True, timeout=30)
        try:
            mark = json.dumps(
                src.execute(
                    "SELECT COUNT(*), MAX(finished_at), MAX(started_at), SUM(state='running') FROM trials"
                ).fetchone()
            )
            if mark == self._meta(db, "ledger_mark"):  # nothing started, finished or forgotten since the last look
                return
            cols = ", ".join(LEDGER_COLUMNS)
            known = db.execute("SELECT COUNT(*), MAX(finished_at), MAX(started_at) FROM trials").fetchone()
            forgotten = known[0] > json.loads(mark)[0]
            tokens = "COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0)"
            if forgotten:  # trials were removed from the ledger: copy every row, drop the rest
                rows = src.execute(f"SELECT {cols}, {tokens} FROM trials")
            else:  # what changed since the last look: new, restarted or newly finished trials
                since = max(known[1] or 0, known[2] or 0)
                rows = src.execute(
                    f"SELECT {cols}, {tokens} FROM trials WHERE state='running' OR finished_at >= ? OR started_at >= ?",
                    (since, since),
                )
            placeholders = ", ".join("?" * (len(LEDGER_COLUMNS) + 1))
            updates = ", ".join(f"{c}=excluded.{c}" for c in (*LEDGER_COLUMNS[1:], "tokens"))
            db.execute("BEGIN")
            if forgotten:
                db.execute("CREATE TEMP TABLE IF NOT EXISTS seen (trial_id TEXT PRIMARY KEY)")
                db.execute("DELETE FROM seen")
            for batch in _batches(rows, 5000):
                db.executemany(
                    f"INSERT INTO trials ({cols}, tokens) VALUES ({placeholders}) "
                    f"ON CONFLICT(trial_id) DO UPDATE SET {updates}",
                    batch,
                )
                if forgotten:
                    db.executemany("INSERT OR IGNORE INTO seen VALUES (?)", [(r[0],) for r in batch])
            if forgotten:
                db.execute("DELETE FROM trials WHERE trial_id NOT IN (SELECT trial_id FROM seen)")
            self._set_meta(db, "ledger_mark", mark)
            db.execute("COMMIT")
        finally:
            src.close()

    # ------------------------------------------------------------------ trial folders

    def _read_facts(self, db: sqlite3.Connection, progress) -> int:
        """Read turns, tamper evidence and the filters' verdict of finished trials not read yet."""
        todo = db.execute(
            "SELECT trial_id, finished_at FROM trials WHERE state='done' AND "
            "(facts_of IS NULL OR facts_of != finished_at)"
        ).fetchall()
        if not todo:
            return 0
        folders = _folder_names(self.trials_dir)
        updates = []
        for i, row in enumerate(todo):
            trial_id = row["trial_id"]
            if trial_id not in folders:
                updates.append((row["finished_at"], 0, None, None, None, None, None, None, "no trial folder", trial_id))
            else:
                updates.append((row["finished_at"], 1, *self.judge.facts(self.trials_dir / trial_id), trial_id))
            if len(updates) >= 2000:
                self._write_facts(db, updates)
                updates = []
            if progress:
                progress(i + 1, len(todo))
        self._write_facts(db, updates)
        return len(todo)

    @staticmethod
    def _write_facts(db: sqlite3.Connection, updates: list[tuple]) -> None:
        db.execute("BEGIN")
        db.executemany(
            "UPDATE trials SET facts_of=?, has_folder=?, turns=?, tamper=?, tamper_kinds=?, filter_kept=?, "
            "filter_reason=?, filters_failed=?, facts_error=? WHERE trial_id=?",
            updates,
        )
        db.execute("COMMIT")

    @staticmethod
    def _meta(db: sqlite3.Connection, key: str) -> str | None:
        row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    @staticmethod
    def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def _folder_names(trials_dir: Path) -> set[str]:
    try:
        return {e.name for e in os.scandir(trials_dir) if e.is_dir() and not e.name.startswith(".")}
    except FileNotFoundError:
        return set()


def _batches(rows: Iterator, size: int) -> Iterator[list]:
    batch = []
    for r in rows:
        batch.append(tuple(r))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
