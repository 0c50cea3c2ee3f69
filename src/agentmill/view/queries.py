"""The trial list as SQL over the index: filters, search, sort, limit/offset; every value a bound parameter."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from agentmill.errors import AgentmillError

MAX_LIMIT = 500
SORTS = {
    "task": "task, attempt",
    "attempt": "attempt",
    "outcome": "outcome, task, attempt",
    "reward": "reward",
    "turns": "turns",
    "tokens": "tokens",
    "seconds": "seconds",
    "finished": "finished_at",
}
LIST_COLUMNS = (
    "trial_id, task, task_hash, attempt, state, outcome, reward, tokens, prompt_tokens, completion_tokens, "
    "seconds, turns, tamper, tamper_kinds, filter_kept, filter_reason, filters_failed, has_folder, facts_error, "
    "finished_at"
)


class BadQuery(AgentmillError):
    """A list parameter the viewer cannot use; the message names it."""


@dataclass
class TrialQuery:
    q: str = ""  # substring of the task name, trial id prefix, or the exception
    task: str | None = None  # exact task name
    outcomes: list[str] = field(default_factory=list)
    reward_min: float | None = None
    reward_max: float | None = None
    turns_min: int | None = None
    turns_max: int | None = None
    tokens_min: int | None = None
    tokens_max: int | None = None
    tamper: str | None = None  # "yes" | "no"
    kept: str | None = None  # "kept" | "dropped" | a rule name (dropped first by it) | "unknown"
    sort: str = "task"
    desc: bool = False
    limit: int = 50
    offset: int = 0

    @classmethod
    def from_params(cls, params: dict[str, list[str]]) -> TrialQuery:
        """From a query string's parameters; a bad value is one error naming the parameter."""

        def one(name: str) -> str | None:
            v = params.get(name, [""])[-1].strip()
            return v or None

        def num(name: str, kind=float):
            v = one(name)
            if v is None:
                return None
            try:
                return kind(v)
            except ValueError:
                raise BadQuery(f"parameter '{name}': not a number: {v!r}") from None

        q = cls(
            q=one("q") or "",
            task=one("task"),
            outcomes=[o for v in params.get("outcome", []) for o in v.split(",") if o],
            reward_min=num("reward_min"),
            reward_max=num("reward_max"),
            turns_min=num("turns_min", int),
            turns_max=num("turns_max", int),
            tokens_min=num("tokens_min", int),
            tokens_max=num("tokens_max", int),
            tamper=one("tamper"),
            kept=one("kept"),
            sort=one("sort") or "task",
            desc=one("desc") in ("1", "true"),
            limit=num("limit", int) or 50,
            offset=num("offset", int) or 0,
        )
        if q.sort not in SORTS:
            raise BadQuery(f"parameter 'sort': unknown column {q.sort!r} (known: {', '.join(SORTS)})")
        if q.tamper not in (None, "yes", "no"):
            raise BadQuery("parameter 'tamper': give yes or no")
        if not 1 <= q.limit <= MAX_LIMIT:
            raise BadQuery(f"parameter 'limit': between 1 and {MAX_LIMIT}")
        if q.offset < 0:
            raise BadQuery("parameter 'offset': must not be negative")
        return q

    def where(self) -> tuple[str, list]:
        clauses: list[str] = []
        args: list = []
        if self.q:
            like = "%" + self.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            clauses.append("(task LIKE ? ESCAPE '\\' OR trial_id LIKE ? ESCAPE '\\' OR exception LIKE ? ESCAPE '\\')")
            args += [like, like, like]
        if self.task:
            clauses.append("task = ?")
            args.append(self.task)
        if self.outcomes:
            clauses.append(f"outcome IN ({', '.join('?' * len(self.outcomes))})")
            args += self.outcomes
        for column, low, high in (
            ("reward", self.reward_min, self.reward_max),
            ("turns", self.turns_min, self.turns_max),
            ("tokens", self.tokens_min, self.tokens_max),
        ):
            if low is not None:
                clauses.append(f"{column} >= ?")
                args.append(low)
            if high is not None:
                clauses.append(f"{column} <= ?")
                args.append(high)
        if self.tamper == "yes":
            clauses.append("tamper > 0")
        elif self.tamper == "no":
            clauses.append("COALESCE(tamper, 0) = 0")
        if self.kept == "kept":
            clauses.append("filter_kept = 1")
        elif self.kept == "dropped":
            clauses.append("filter_kept = 0")
        elif self.kept == "unknown":
            clauses.append("filter_kept IS NULL")
        elif self.kept:
            clauses.append("filter_kept = 0 AND filter_reason = ?")
            args.append(self.kept)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args

    def order(self) -> str:
        direction = " DESC" if self.desc else ""
        return "ORDER BY " + ", ".join(c + direction for c in SORTS[self.sort].split(", ")) + ", trial_id" + direction


def list_trials(db: sqlite3.Connection, query: TrialQuery) -> dict:
    """One page of trials and the total that match."""
    where, args = query.where()
    total = db.execute(f"SELECT COUNT(*) FROM trials{where}", args).fetchone()[0]
    rows = db.execute(
        f"SELECT {LIST_COLUMNS} FROM trials{where} {query.order()} LIMIT ? OFFSET ?", [*args, query.limit, query.offset]
    ).fetchall()
    return {"total": total, "offset": query.offset, "limit": query.limit, "trials": [dict(r) for r in rows]}


def facets(db: sqlite3.Connection) -> dict:
    """What the filters can choose from, with counts."""

    def counts(sql: str) -> list[dict]:
        return [{"value": r[0], "count": r[1]} for r in db.execute(sql)]

    return {
        "trials": db.execute("SELECT COUNT(*) FROM trials").fetchone()[0],
        "tasks": db.execute("SELECT COUNT(DISTINCT task) FROM trials").fetchone()[0],
        "outcomes": counts("SELECT COALESCE(outcome, state), COUNT(*) FROM trials GROUP BY 1 ORDER BY 2 DESC"),
        "filter_reasons": counts(
            "SELECT filter_reason, COUNT(*) FROM trials WHERE filter_kept = 0 GROUP BY 1 ORDER BY 2 DESC"
        ),
        "kept": db.execute("SELECT COUNT(*) FROM trials WHERE filter_kept = 1").fetchone()[0],
        "tampered": db.execute("SELECT COUNT(*) FROM trials WHERE tamper > 0").fetchone()[0],
    }


def attempts_of(db: sqlite3.Connection, task: str, task_hash: str) -> list[dict]:
    """Every attempt at one task (same name and content), for the links between attempts."""
    rows = db.execute(
        "SELECT trial_id, attempt, outcome, reward, turns, tokens, state FROM trials "
        "WHERE task_hash = ? AND task = ? ORDER BY attempt, trial_id",
        (task_hash, task),
    )
    return [dict(r) for r in rows]
