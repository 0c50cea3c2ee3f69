"""The synthesis store: one SQLite file (WAL) holding every card, candidate, attempt, gate result,
diagnosis, repair, acceptance and meta-review, with lineage card -> target sample -> multiply variants.

Acceptance is one transaction keyed by the candidate id (a second acceptance of the same candidate is
impossible), committed *before* the task folder is written: a kill between the two leaves an
acceptance whose folder `materialize` rewrites on the next start, never a folder without a row.
Candidates a killed process left open are marked `interrupted` on the next start.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, cast

from agentmill.errors import AgentmillError
from agentmill.synth.candidate import Candidate
from agentmill.synth.card import CapabilityCard
from agentmill.synth.critic import Diagnosis
from agentmill.synth.gates.base import GateResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cards (card_id TEXT PRIMARY KEY, source_task TEXT NOT NULL, card TEXT NOT NULL,
  target_count INTEGER NOT NULL, multiplier REAL NOT NULL DEFAULT 1.0, flagged TEXT);
CREATE TABLE IF NOT EXISTS barrier (card_id TEXT NOT NULL, source_task TEXT NOT NULL, leaks TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS candidates (candidate_id TEXT PRIMARY KEY, card_id TEXT NOT NULL REFERENCES cards(card_id),
  kind TEXT NOT NULL CHECK (kind IN ('target', 'multiply')), parent_id TEXT REFERENCES candidates(candidate_id),
  slot INTEGER, state TEXT NOT NULL CHECK (state IN ('open', 'accepted', 'rejected', 'interrupted')),
  reason TEXT, started REAL NOT NULL, finished REAL);
CREATE TABLE IF NOT EXISTS attempts (attempt_id INTEGER PRIMARY KEY, candidate_id TEXT NOT NULL REFERENCES candidates(candidate_id),
  n INTEGER NOT NULL, origin TEXT NOT NULL, body TEXT, raw TEXT, error TEXT, started REAL NOT NULL, seconds REAL,
  UNIQUE (candidate_id, n));
CREATE TABLE IF NOT EXISTS gate_results (attempt_id INTEGER NOT NULL REFERENCES attempts(attempt_id), gate TEXT NOT NULL,
  passed INTEGER NOT NULL, code TEXT NOT NULL, fault TEXT NOT NULL, category TEXT, message TEXT, details TEXT,
  seconds REAL NOT NULL);
CREATE TABLE IF NOT EXISTS diagnoses (attempt_id INTEGER NOT NULL REFERENCES attempts(attempt_id), category TEXT NOT NULL,
  components TEXT NOT NULL, explanation TEXT, by TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS repairs (attempt_id INTEGER NOT NULL REFERENCES attempts(attempt_id), components TEXT NOT NULL,
  ok INTEGER NOT NULL, error TEXT);
CREATE TABLE IF NOT EXISTS acceptances (candidate_id TEXT PRIMARY KEY REFERENCES candidates(candidate_id),
  card_id TEXT NOT NULL, kind TEXT NOT NULL, parent_id TEXT, attempt_id INTEGER NOT NULL, body TEXT NOT NULL,
  at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS meta_reviews (n INTEGER PRIMARY KEY, after_boxes INTEGER NOT NULL, review TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS usage (role TEXT PRIMARY KEY, requests INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL);
-- for the viewer's paged reads (synth/view_source.py): an attempt's results, a card's or a parent's candidates
CREATE INDEX IF NOT EXISTS gate_results_attempt ON gate_results (attempt_id);
CREATE INDEX IF NOT EXISTS gate_results_failed ON gate_results (gate, code, passed, attempt_id);
CREATE INDEX IF NOT EXISTS diagnoses_attempt ON diagnoses (attempt_id);
CREATE INDEX IF NOT EXISTS repairs_attempt ON repairs (attempt_id);
CREATE INDEX IF NOT EXISTS candidates_card ON candidates (card_id, candidate_id);
CREATE INDEX IF NOT EXISTS candidates_parent ON candidates (parent_id, candidate_id);
CREATE INDEX IF NOT EXISTS candidates_state ON candidates (state, card_id, candidate_id);
CREATE INDEX IF NOT EXISTS candidates_kind ON candidates (kind, card_id, candidate_id);
CREATE INDEX IF NOT EXISTS acceptances_card ON acceptances (card_id, kind);
"""


class LineageError(AgentmillError):
    """A candidate whose parent may not seed it (a multiply variant of anything but an accepted target)."""


class SynthStore:
    FILE = "synth.sqlite"

    def __init__(self, out: Path):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.out / self.FILE, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)

    @classmethod
    def open_existing(cls, out: Path) -> SynthStore:
        if not (Path(out) / cls.FILE).is_file():
            raise AgentmillError(f"{out}: not a synth output folder (no {cls.FILE}; run `agentmill synth run` first)")
        return cls(out)

    def close(self) -> None:
        self.db.close()

    def _tx(self, *statements: tuple[str, tuple]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for sql, args in statements:
                self.db.execute(sql, args)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- meta, cards -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def add_card(self, card: CapabilityCard, target_count: int) -> None:
        self.db.execute(
            "INSERT OR IGNORE INTO cards (card_id, source_task, card, target_count) VALUES (?, ?, ?, ?)",
            (card.card_id, card.source_task, card.model_dump_json(), target_count),
        )

    def cards(self) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT * FROM cards ORDER BY card_id")]

    def card(self, card_id: str) -> CapabilityCard:
        row = self.db.execute("SELECT card FROM cards WHERE card_id = ?", (card_id,)).fetchone()
        return CapabilityCard.model_validate_json(row[0])

    def set_multiplier(self, card_id: str, multiplier: float, flagged: str | None) -> None:
        self.db.execute(
            "UPDATE cards SET multiplier = ?, flagged = ? WHERE card_id = ?", (multiplier, flagged, card_id)
        )

    def barrier_rejection(self, card: CapabilityCard, leaks: list[dict]) -> None:
        self.db.execute(
            "INSERT INTO barrier (card_id, source_task, leaks, at) VALUES (?, ?, ?, ?)",
            (card.card_id, card.source_task, json.dumps(leaks), time.time()),
        )

    # -- candidates and attempts -------------------------------------------------------------------

    def interrupt_open(self) -> int:
        return self.db.execute(
            "UPDATE candidates SET state = 'interrupted', reason = 'the run was killed', "
            "finished = ? WHERE state = 'open'",
            (time.time(),),
        ).rowcount

    def slots_used(self) -> int:
        """Target slots that count against max_slots: a box an outage or a kill ended `interrupted`
        gives its slot back, so a later run spends it again."""
        return self.db.execute(
            "SELECT COUNT(*) FROM candidates WHERE slot IS NOT NULL AND state != 'interrupted'"
        ).fetchone()[0]

    def interrupted_since(self, started: float) -> list[str]:
        """The reasons of boxes ended `interrupted` since `started` (time.time())."""
        return [
            r[0]
            for r in self.db.execute(
                "SELECT reason FROM candidates WHERE state = 'interrupted' AND started >= ?", (started,)
            )
        ]

    def next_slot(self) -> int:
        row = self.db.execute("SELECT MAX(slot) FROM candidates").fetchone()
        return 0 if row[0] is None else row[0] + 1

    def candidate_state(self, candidate_id: str) -> str | None:
        row = self.db.execute("SELECT state FROM candidates WHERE candidate_id = ?", (candidate_id,)).fetchone()
        return row[0] if row else None

    def start_candidate(
        self, candidate_id: str, card_id: str, kind: str, parent_id: str | None, slot: int | None
    ) -> None:
        if kind == "multiply":
            parent = self.db.execute(
                "SELECT c.kind, a.candidate_id AS acc FROM candidates c LEFT JOIN acceptances a "
                "USING (candidate_id) WHERE c.candidate_id = ?",
                (parent_id,),
            ).fetchone()
            if parent is None or parent["acc"] is None:
                raise LineageError(f"{candidate_id}: parent {parent_id!r} is not an accepted sample")
            if parent["kind"] != "target":
                raise LineageError(
                    f"{candidate_id}: parent {parent_id} is a multiply sample; only target samples seed variants"
                )
        elif parent_id is not None:
            raise LineageError(f"{candidate_id}: a target candidate has no parent")
        self.db.execute(
            "INSERT INTO candidates (candidate_id, card_id, kind, parent_id, slot, state, started) "
            "VALUES (?, ?, ?, ?, ?, 'open', ?)",
            (candidate_id, card_id, kind, parent_id, slot, time.time()),
        )

    def add_attempt(self, candidate_id: str, n: int, origin: str, body: str | None, raw: str, error: str | None) -> int:
        cur = self.db.execute(
            "INSERT INTO attempts (candidate_id, n, origin, body, raw, error, started) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (candidate_id, n, origin, body, raw[:20000], error, time.time()),
        )
        return cast(int, cur.lastrowid)  # set by every successful INSERT

    def finish_attempt(self, attempt_id: int, seconds: float) -> None:
        self.db.execute("UPDATE attempts SET seconds = ? WHERE attempt_id = ?", (seconds, attempt_id))

    def add_gate(self, attempt_id: int, r: GateResult) -> None:
        self.db.execute(
            "INSERT INTO gate_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                attempt_id,
                r.gate,
                int(r.passed),
                r.code,
                r.fault,
                r.category,
                r.message,
                json.dumps(r.details, default=str)[:200000],
                r.seconds,
            ),
        )

    def add_diagnosis(self, attempt_id: int, d: Diagnosis) -> None:
        self.db.execute(
            "INSERT INTO diagnoses VALUES (?, ?, ?, ?, ?)",
            (attempt_id, d.category, json.dumps(d.components), d.explanation, d.by),
        )

    def add_repair(self, attempt_id: int, components: list[str], ok: bool, error: str | None) -> None:
        self.db.execute("INSERT INTO repairs VALUES (?, ?, ?, ?)", (attempt_id, json.dumps(components), int(ok), error))

    def accept(self, cand: Candidate, attempt_id: int) -> None:
        now = time.time()
        self._tx(
            (
                "INSERT INTO acceptances VALUES (?, ?, ?, ?, ?, ?, ?)",
                (cand.candidate_id, cand.card_id, cand.kind, cand.parent_id, attempt_id, cand.model_dump_json(), now),
            ),
            ("UPDATE candidates SET state = 'accepted', finished = ? WHERE candidate_id = ?", (now, cand.candidate_id)),
        )

    def interrupt(self, candidate_id: str, reason: str) -> None:
        """Not the candidate's fault (an outage): the box ends without a verdict."""
        self.db.execute(
            "UPDATE candidates SET state = 'interrupted', reason = ?, finished = ? WHERE candidate_id = ?",
            (reason[:2000], time.time(), candidate_id),
        )

    def reject(self, candidate_id: str, reason: str) -> None:
        self.db.execute(
            "UPDATE candidates SET state = 'rejected', reason = ?, finished = ? WHERE candidate_id = ?",
            (reason[:2000], time.time(), candidate_id),
        )

    # -- reading -----------------------------------------------------------------------------------

    def accepted(self, kind: str | None = None) -> list[Candidate]:
        sql = "SELECT body FROM acceptances" + (" WHERE kind = ?" if kind else "") + " ORDER BY at, candidate_id"
        return [Candidate.model_validate_json(r[0]) for r in self.db.execute(sql, (kind,) if kind else ())]

    def accepted_counts(self) -> dict[str, int]:
        return {
            r[0]: r[1]
            for r in self.db.execute("SELECT card_id, COUNT(*) FROM acceptances WHERE kind = 'target' GROUP BY card_id")
        }

    def finished_boxes(self, kind: str | None = None) -> int:
        sql = "SELECT COUNT(*) FROM candidates WHERE state IN ('accepted', 'rejected')" + (
            " AND kind = ?" if kind else ""
        )
        return self.db.execute(sql, (kind,) if kind else ()).fetchone()[0]

    def rows(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute(sql, args)]

    def add_meta_review(self, after_boxes: int, review: dict) -> None:
        """The review and the cadence mark it settles (meta `reviewed_at_boxes`) in one transaction: a kill
        leaves either both or neither, so a review is never lost nor made twice."""
        n = self.db.execute("SELECT COUNT(*) FROM meta_reviews").fetchone()[0]
        self._tx(
            ("INSERT INTO meta_reviews VALUES (?, ?, ?, ?)", (n, after_boxes, json.dumps(review), time.time())),
            (
                "INSERT INTO meta (key, value) VALUES ('reviewed_at_boxes', ?) ON CONFLICT(key) DO UPDATE SET "
                "value = excluded.value",
                (str(after_boxes),),
            ),
        )

    def latest_guidance(self) -> str:
        row = self.db.execute("SELECT review FROM meta_reviews ORDER BY n DESC LIMIT 1").fetchone()
        return json.loads(row[0]).get("guidance", "") if row else ""

    def add_usage(self, role: str, requests: int, prompt: int, completion: int, cost: float) -> None:
        self.db.execute(
            "INSERT INTO usage VALUES (?, ?, ?, ?, ?) ON CONFLICT(role) DO UPDATE SET "
            "requests = requests + excluded.requests, prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
            "completion_tokens = completion_tokens + excluded.completion_tokens, "
            "cost_usd = cost_usd + excluded.cost_usd",
            (role, requests, prompt, completion, cost),
        )
