"""The viewer's source for `agentmill synth run --out` folders (kind "synth").

`agentmill view OUT` finds it through the `agentmill.view_sources` entry point, so the viewer imports
nothing from synth. Every route is a few paged SQL queries on a read-only connection to
synth.sqlite, opened per request (the HTTP server is threaded, and a run may still be writing).
Everything in the store that a model wrote (bodies, raw replies, gate messages, diagnoses) is
returned as it is; the page shows it only as text.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.synth.report import funnel
from agentmill.synth.store import SynthStore

STATES = ("open", "accepted", "rejected", "interrupted")
KINDS = ("target", "multiply")
MAX_LIMIT = 500


class BadParam(AgentmillError):
    """A query parameter the routes cannot use (the server answers 400 with this message)."""


class _ReadOnlyStore:
    """The reading half of SynthStore (rows, cards, get_meta) over a read-only connection, so the
    report's own funnel counts the same way here."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def rows(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute(sql, args)]

    def cards(self) -> list[dict]:
        return self.rows("SELECT * FROM cards ORDER BY card_id")

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None


class SynthViewSource:
    kind = "synth"

    def __init__(self, path: Path):
        self.path = Path(path)
        self.file = self.path / SynthStore.FILE
        self.title = self.path.resolve().name
        self._summary_cache: tuple[tuple, dict] | None = None
        self._connect().close()  # fail now, with the file's name, if it is not a readable store

    def routes(self):
        return {
            "summary": self.summary,
            "candidates": self.candidates,
            "candidate": self.candidate,
            "lineage": self.lineage,
        }

    def close(self) -> None:
        pass

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                f"{self.file.resolve().as_uri()}?mode=ro", uri=True, timeout=10, check_same_thread=False
            )
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA query_only = ON")
            db.execute("SELECT 1 FROM candidates LIMIT 1")
        except sqlite3.Error as e:
            raise AgentmillError(f"{self.file}: not a readable synth store ({e})") from None
        return db

    def _read(self, fn, *args):
        db = self._connect()
        try:
            return fn(db, *args)
        finally:
            db.close()

    # -- routes ------------------------------------------------------------------------------------

    def summary(self, params) -> dict:
        # the funnel counts every gate result; kept while the store's files are unchanged (a run that
        # is still writing changes the WAL file's size or time, a checkpoint the main file's)
        key = _files_key(self.file, self.file.with_name(self.file.name + "-wal"))
        if self._summary_cache is None or self._summary_cache[0] != key:
            self._summary_cache = (key, self._read(self._summary))
        return self._summary_cache[1]

    def candidates(self, params) -> dict:
        return self._read(self._candidates, CandidateQuery.from_params(params))

    def candidate(self, params) -> dict:
        return self._read(self._candidate, _one(params, "id"))

    def lineage(self, params) -> dict:
        card = params.get("card", [""])[-1]
        if card:
            return self._read(self._card_lineage, card)
        return self._read(self._cards_page, _int(params, "offset", 0, 0, None), _int(params, "limit", 50, 1, MAX_LIMIT))

    # -- queries -----------------------------------------------------------------------------------

    def _summary(self, db) -> dict:
        one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
        states = {r[0]: r[1] for r in db.execute("SELECT state, COUNT(*) FROM candidates GROUP BY state")}
        kinds = {r[0]: r[1] for r in db.execute("SELECT kind, COUNT(*) FROM candidates GROUP BY kind")}
        gates = [r[0] for r in db.execute("SELECT DISTINCT gate FROM gate_results ORDER BY gate")]
        codes = [
            {"gate": r[0], "code": r[1], "count": r[2]}
            for r in db.execute(
                "SELECT gate, code, COUNT(*) FROM gate_results WHERE passed = 0 GROUP BY gate, code ORDER BY gate, code"
            )
        ]
        return {
            "kind": self.kind,
            "title": self.title,
            "path": str(self.path),
            "counts": {
                "cards": one("SELECT COUNT(*) FROM cards"),
                "candidates": one("SELECT COUNT(*) FROM candidates"),
                "attempts": one("SELECT COUNT(*) FROM attempts"),
                "accepted": one("SELECT COUNT(*) FROM acceptances"),
                "diagnoses": one("SELECT COUNT(*) FROM diagnoses"),
                "repairs": one("SELECT COUNT(*) FROM repairs"),
                "barrier_rejections": one("SELECT COUNT(*) FROM barrier"),
                "states": states,
                "kinds": kinds,
            },
            "funnel": funnel(_ReadOnlyStore(db)),
            "gates": gates,
            "failures": codes,
            "cards": [r[0] for r in db.execute("SELECT card_id FROM cards ORDER BY card_id LIMIT 1000")],
        }

    def _candidates(self, db, q: CandidateQuery) -> dict:
        where, args = q.where()
        total = db.execute(f"SELECT COUNT(*) FROM candidates c {where}", args).fetchone()[0]
        rows = [
            dict(r)
            for r in db.execute(
                f"SELECT c.candidate_id, c.card_id, c.kind, c.parent_id, c.state, c.reason, c.started, c.finished, "
                f"(SELECT COUNT(*) FROM attempts a WHERE a.candidate_id = c.candidate_id) AS attempts, "
                f"(SELECT g.gate || ':' || g.code FROM gate_results g JOIN attempts a USING (attempt_id) "
                f" WHERE a.candidate_id = c.candidate_id AND g.passed = 0 ORDER BY a.n DESC, g.rowid DESC LIMIT 1) AS last_failure "
                f"FROM candidates c {where} ORDER BY c.card_id, c.candidate_id LIMIT ? OFFSET ?",
                (*args, q.limit, q.offset),
            )
        ]
        return {"total": total, "offset": q.offset, "limit": q.limit, "candidates": rows}

    def _candidate(self, db, cid: str) -> dict:
        row = db.execute("SELECT * FROM candidates WHERE candidate_id = ?", (cid,)).fetchone()
        if row is None:
            raise _not_found(f"candidate {cid!r}: not in this store")
        attempts = [dict(a) for a in db.execute("SELECT * FROM attempts WHERE candidate_id = ? ORDER BY n", (cid,))]
        ids = tuple(a["attempt_id"] for a in attempts)
        by_attempt = lambda sql: _group(db, sql, ids)  # noqa: E731
        gates = by_attempt("SELECT rowid AS _r, * FROM gate_results WHERE attempt_id IN ({}) ORDER BY rowid")
        diagnoses = by_attempt("SELECT rowid AS _r, * FROM diagnoses WHERE attempt_id IN ({}) ORDER BY rowid")
        repairs = by_attempt("SELECT rowid AS _r, * FROM repairs WHERE attempt_id IN ({}) ORDER BY rowid")
        for a in attempts:
            a["body"] = _json_or_text(a["body"])
            a["gates"] = [
                {**g, "passed": bool(g["passed"]), "details": _json_or_text(g["details"])}
                for g in gates.get(a["attempt_id"], [])
            ]
            a["diagnoses"] = [
                {**d, "components": _json_or_text(d["components"])} for d in diagnoses.get(a["attempt_id"], [])
            ]
            a["repairs"] = [
                {**r, "ok": bool(r["ok"]), "components": _json_or_text(r["components"])}
                for r in repairs.get(a["attempt_id"], [])
            ]
        acc = db.execute("SELECT * FROM acceptances WHERE candidate_id = ?", (cid,)).fetchone()
        acceptance = None if acc is None else {**dict(acc), "body": _json_or_text(acc["body"])}
        card = db.execute(
            "SELECT card_id, source_task, card, target_count, multiplier, flagged FROM cards WHERE card_id = ?",
            (row["card_id"],),
        ).fetchone()
        variants = [
            dict(r)
            for r in db.execute(
                "SELECT candidate_id, state FROM candidates WHERE parent_id = ? ORDER BY candidate_id LIMIT 200", (cid,)
            )
        ]
        return {
            "candidate": dict(row),
            "attempts": attempts,
            "acceptance": acceptance,
            "variants": variants,
            "card": None if card is None else {**dict(card), "card": _json_or_text(card["card"])},
        }

    def _cards_page(self, db, offset: int, limit: int) -> dict:
        total = db.execute("SELECT COUNT(*) FROM cards").fetchone()[0]
        rows = [
            dict(r)
            for r in db.execute(
                "SELECT k.card_id, k.source_task, k.target_count, k.multiplier, k.flagged, "
                "(SELECT COUNT(*) FROM candidates c WHERE c.card_id = k.card_id) AS candidates, "
                "(SELECT COUNT(*) FROM acceptances a WHERE a.card_id = k.card_id AND a.kind = 'target') AS targets, "
                "(SELECT COUNT(*) FROM acceptances a WHERE a.card_id = k.card_id AND a.kind = 'multiply') AS variants "
                "FROM cards k ORDER BY k.card_id LIMIT ? OFFSET ?",
                (limit, offset),
            )
        ]
        return {"total": total, "offset": offset, "limit": limit, "cards": rows}

    def _card_lineage(self, db, card_id: str) -> dict:
        card = db.execute(
            "SELECT card_id, source_task, card, target_count, multiplier, flagged FROM cards WHERE card_id = ?",
            (card_id,),
        ).fetchone()
        if card is None:
            raise _not_found(f"card {card_id!r}: not in this store")
        cols = "candidate_id, kind, parent_id, state, reason"
        targets = [
            dict(r)
            for r in db.execute(
                f"SELECT {cols} FROM candidates WHERE card_id = ? AND kind = 'target' ORDER BY candidate_id LIMIT 1000",
                (card_id,),
            )
        ]
        variants = _group(
            db,
            f"SELECT {cols} FROM candidates WHERE parent_id IN ({{}}) ORDER BY candidate_id",
            tuple(t["candidate_id"] for t in targets),
            key="parent_id",
        )
        for t in targets:
            t["variants"] = variants.get(t["candidate_id"], [])
        return {"card": {**dict(card), "card": _json_or_text(card["card"])}, "targets": targets}


class CandidateQuery:
    """The candidate list's filters: card (exact), gate (failed at it) and code, state, kind, text search."""

    def __init__(self, *, card="", gate="", code="", state="", kind="", q="", offset=0, limit=50):
        self.card, self.gate, self.code, self.state, self.kind, self.q = card, gate, code, state, kind, q
        self.offset, self.limit = offset, limit

    @classmethod
    def from_params(cls, params: dict[str, list[str]]) -> CandidateQuery:
        get = lambda k: params.get(k, [""])[-1].strip()  # noqa: E731
        state, kind = get("state") or get("status"), get("kind")
        if state and state not in STATES:
            raise BadParam(f"parameter 'state': {state!r} is not one of {', '.join(STATES)}")
        if kind and kind not in KINDS:
            raise BadParam(f"parameter 'kind': {kind!r} is not one of {', '.join(KINDS)}")
        return cls(
            card=get("card"),
            gate=get("gate"),
            code=get("code"),
            state=state,
            kind=kind,
            q=get("q"),
            offset=_int(params, "offset", 0, 0, None),
            limit=_int(params, "limit", 50, 1, MAX_LIMIT),
        )

    def where(self) -> tuple[str, tuple]:
        clauses, args = [], []
        for column, value in (("card_id", self.card), ("state", self.state), ("kind", self.kind)):
            if value:
                clauses.append(f"c.{column} = ?")
                args.append(value)
        if self.gate or self.code:  # the candidates some attempt of which failed this gate (with this code)
            sub = "SELECT a.candidate_id FROM attempts a JOIN gate_results g USING (attempt_id) WHERE g.passed = 0"
            if self.gate:
                sub += " AND g.gate = ?"
                args.append(self.gate)
            if self.code:
                sub += " AND g.code = ?"
                args.append(self.code)
            clauses.append(f"c.candidate_id IN ({sub})")
        if self.q:
            clauses.append("(instr(c.candidate_id, ?) > 0 OR instr(coalesce(c.reason, ''), ?) > 0)")
            args += [self.q, self.q]
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(args)


def _group(db, sql: str, ids: tuple, key: str = "attempt_id") -> dict[Any, list[dict]]:
    """Rows of `sql` (with `IN ({})` for the ids) grouped by `key`, in chunks SQLite accepts."""
    out: dict[Any, list[dict]] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        for r in db.execute(sql.format(",".join("?" * len(chunk))), chunk):
            d = dict(r)
            d.pop("_r", None)
            out.setdefault(d[key], []).append(d)
    return out


def _files_key(*paths: Path) -> tuple:
    """Size and modification time of each file (None when absent): changes whenever SQLite writes."""
    key: list[tuple[int, int] | None] = []
    for p in paths:
        try:
            st = p.stat()
            key.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            key.append(None)
    return tuple(key)


def _json_or_text(s):
    """Stored JSON parsed; text that is not JSON (a model's broken reply) kept as text."""
    if s is None:
        return None
    try:
        return json.loads(s)
    except (TypeError, ValueError):
        return s


def _one(params, name: str) -> str:
    value = params.get(name, [""])[-1]
    if not value:
        raise BadParam(f"parameter '{name}' is required")
    return value


def _int(params, name: str, default: int, lo: int, hi: int | None) -> int:
    raw = params.get(name, [""])[-1].strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParam(f"parameter '{name}': {raw!r} is not a whole number") from None
    if value < lo or (hi is not None and value > hi):
        raise BadParam(f"parameter '{name}': {value} is out of range ({lo}..{hi if hi is not None else ''})")
    return value


def _not_found(message: str) -> Exception:
    # the viewer's own NotFoundError makes a 404; imported here (synth may import view, never the reverse)
    from agentmill.view.trial import NotFoundError

    return NotFoundError(message)


def open_synth_store(path: Path, **_options) -> SynthViewSource | None:
    """The `agentmill.view_sources` opener: a folder holding synth.sqlite (None for any other folder)."""
    path = Path(path)
    if path.is_file() and path.name == SynthStore.FILE:
        path = path.parent
    if not (path / SynthStore.FILE).is_file():
        return None
    return SynthViewSource(path)
