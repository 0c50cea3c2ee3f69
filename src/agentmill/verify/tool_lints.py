"""Static lints of a tool task's verifiers (no sandbox needed): the cheap half of `check`'s audit.

A lint is a verdict when its severity is "error". Dynamic lints (a query that errors on the real
state, a vacuous verifier, a reference call that errors during replay) come from verify/mutation.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

import sqlglot
from sqlglot import expressions as exp

from agentmill.tasks.model import Task
from agentmill.tasks.tool_spec import DatabaseStateVerifier, ResponseCheckVerifier

# code -> the verdict `check` gives when it fires
LINT_VERDICTS = {
    "empty_verifiers": "tests/verifiers.json has no verifiers",
    "duplicate_verifier_names": "two verifiers share a name (reward.json keeps one entry per name)",
    "query_error": "a verifier's query does not parse, is not a read-only SELECT, or errors on the task's state",
    "vacuous_verifier": "a verifier passes on the untouched state and on every wrong state: it checks nothing",
    "replay_error": "a reference call errors when replayed",
}


@dataclass
class Lint:
    code: str
    message: str
    verifier: str | None = None
    severity: str = "error"

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def static_lints(task: Task) -> list[Lint]:
    spec = task.tool_spec
    if spec is None:
        return []
    lints: list[Lint] = []
    if not spec.verifiers:
        lints.append(Lint("empty_verifiers", LINT_VERDICTS["empty_verifiers"]))
    for name, n in Counter(v.name for v in spec.verifiers).items():
        if n > 1:
            lints.append(Lint("duplicate_verifier_names", f"verifier name '{name}' is used {n} times", name))
        if name in ("reward", "nothing_else_changed"):  # the total's entry; the default state-diff check's
            lints.append(
                Lint(
                    "duplicate_verifier_names", f"a verifier may not be named '{name}' (reward.json's own entry)", name
                )
            )
    gyms = {g.name for g in spec.gyms}
    for v in spec.verifiers:
        if v.gym_name is not None and v.gym_name not in gyms:
            lints.append(
                Lint(
                    "query_error",
                    f"gym_name '{v.gym_name}' is not one of this task's gyms ({', '.join(sorted(gyms))})",
                    v.name,
                )
            )
        sql = _sql_of(v)
        if sql is not None:
            problem = sql_problem(sql)
            if problem:
                lints.append(Lint("query_error", problem, v.name))
            elif reads_no_table(sql):
                lints.append(
                    Lint("vacuous_verifier", "its query reads no table: the state cannot change its result", v.name)
                )
    return lints


def _sql_of(v) -> str | None:
    if isinstance(v, DatabaseStateVerifier):
        return v.validation_config.query
    if isinstance(v, ResponseCheckVerifier):
        return v.validation_config.sql_query
    return None


def sql_problem(sql: str) -> str | None:
    """None if `sql` is one read-only SELECT in SQLite's dialect, else what is wrong."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="sqlite") if s is not None]
    except sqlglot.errors.ParseError as e:
        first = str(e).splitlines()[0]
        return f"query does not parse: {first[:200]}"
    if len(statements) != 1:
        return f"query must be one statement, got {len(statements)}"
    stmt = statements[0]
    if not isinstance(stmt, (exp.Select, exp.SetOperation)):
        return f"query must be a SELECT, got {stmt.key.upper()}"
    return None


def reads_no_table(sql: str) -> bool:
    stmt = sqlglot.parse_one(sql, read="sqlite")
    return not any(True for _ in stmt.find_all(exp.Table))
