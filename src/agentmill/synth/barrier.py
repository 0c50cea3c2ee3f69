"""The information barrier: a card must not leak the task it was written from.

A mechanical check over the strings a generator would read (`CapabilityCard.texts()`), against the
original task folder: identifying literal values of the seed state (environment/seed.sql), the
verifier SQL (whole queries, table.column references, identifying literals in them), and long word
n-gram overlap with the user prompt (instruction.md). Returns every leak found; empty means clean.

"Identifying" literal: at least `min_literal_chars` long and containing a digit, '@' or a space (ids,
emails, timestamps, titles, names). Single bare words such as 'accepted' or 'open' are the gym's own
vocabulary (status values) and a card must be able to name them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

import sqlglot
from pydantic import BaseModel, ConfigDict, Field
from sqlglot import exp

from agentmill.errors import AgentmillError
from agentmill.synth.card import CapabilityCard

LeakKind = Literal["seed_value", "verifier_query", "verifier_reference", "verifier_value", "prompt_ngram"]


class BarrierConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ngram: int = Field(8, ge=2, description="shared run of this many prompt words is a leak")
    min_literal_chars: int = Field(4, ge=1)


class Leak(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: LeakKind
    value: str = Field(description="what leaked")
    source: str = Field(description="the original file it comes from")
    field: str = Field(description="the card field it appears in")


class Original(BaseModel):
    """What the barrier protects, read from a task folder."""

    model_config = ConfigDict(extra="forbid")
    prompt: str
    seed_values: list[str]
    verifier_queries: list[str]
    verifier_references: list[str]  # "table.column"
    verifier_values: list[str]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _identifying(value: str, min_chars: int) -> bool:
    return len(value) >= min_chars and bool(re.search(r"[0-9@ ]", value))


def _parse(sql: str, path: Path) -> list[exp.Expr]:
    try:
        return [s for s in sqlglot.parse(sql, read="sqlite") if s is not None]
    except sqlglot.errors.SqlglotError as e:
        raise AgentmillError(f"{path}: SQL does not parse ({str(e).splitlines()[0]})") from e


def _literals(tree: exp.Expr, min_chars: int) -> list[str]:
    return [lit.this.strip() for lit in tree.find_all(exp.Literal) if _identifying(lit.this.strip(), min_chars)]


def _references(tree: exp.Expr) -> list[str]:
    """table.column for each column, aliases resolved; an unqualified column belongs to the only table."""
    tables = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    only = next(iter(tables.values())) if len(set(tables.values())) == 1 else None
    refs = []
    for col in tree.find_all(exp.Column):
        table = tables.get(col.table, col.table) if col.table else only
        if table and col.name:
            refs.append(f"{table}.{col.name}")
    return refs


def load_original(task_dir: Path, config: BarrierConfig | None = None) -> Original:
    cfg = config or BarrierConfig()
    task_dir = Path(task_dir)
    prompt_path = task_dir / "instruction.md"
    if not prompt_path.is_file():
        raise AgentmillError(f"{prompt_path}: missing (the barrier needs the original prompt)")
    seed_values: list[str] = []
    seed = task_dir / "environment" / "seed.sql"
    if seed.is_file():
        for stmt in _parse(seed.read_text(), seed):
            if isinstance(stmt, (exp.Insert, exp.Update)):
                seed_values += _literals(stmt, cfg.min_literal_chars)
    queries, refs, values = [], [], []
    vpath = task_dir / "tests" / "verifiers.json"
    if vpath.is_file():
        try:
            verifiers = json.loads(vpath.read_text())
        except json.JSONDecodeError as e:
            raise AgentmillError(f"{vpath}: not JSON ({e})") from e
        for i, v in enumerate(verifiers if isinstance(verifiers, list) else []):
            query = ((v or {}).get("validation_config") or {}).get("query") if isinstance(v, dict) else None
            if not isinstance(query, str) or not query.strip():
                continue
            queries.append(query)
            for tree in _parse(query, Path(f"{vpath}[{i}].validation_config.query")):
                refs += _references(tree)
                values += _literals(tree, cfg.min_literal_chars)
    dedup = lambda xs: sorted(set(xs))  # noqa: E731
    return Original(
        prompt=prompt_path.read_text(),
        seed_values=dedup(seed_values),
        verifier_queries=queries,
        verifier_references=dedup(refs),
        verifier_values=dedup(values),
    )


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _shared_spans(text: str, prompt_grams: set[tuple[str, ...]], n: int) -> list[str]:
    """Maximal runs of the text's words whose every n-gram also occurs in the prompt."""
    words = _words(text)
    hits = [i for i in range(len(words) - n + 1) if tuple(words[i : i + n]) in prompt_grams]
    spans: list[str] = []
    start: int | None = None
    end = 0
    for i in hits:
        if start is not None and i <= end:
            end = i + n
        else:
            if start is not None:
                spans.append(" ".join(words[start:end]))
            start, end = i, i + n
    if start is not None:
        spans.append(" ".join(words[start:end]))
    return spans


def check_card(card: CapabilityCard, original: Original, config: BarrierConfig | None = None) -> list[Leak]:
    cfg = config or BarrierConfig()
    pw = _words(original.prompt)
    grams = {tuple(pw[i : i + cfg.ngram]) for i in range(len(pw) - cfg.ngram + 1)}
    literal_sets: list[tuple[LeakKind, str, list[str]]] = [
        ("seed_value", "environment/seed.sql", original.seed_values),
        (
            "verifier_value",
            "tests/verifiers.json",
            [v for v in original.verifier_values if v not in original.seed_values],
        ),
        ("verifier_query", "tests/verifiers.json", original.verifier_queries),
    ]
    leaks: list[Leak] = []
    for field, text in card.texts():
        flat = _norm(text)
        for kind, source, values in literal_sets:
            for value in values:
                if _norm(value) and _norm(value) in flat:
                    leaks.append(Leak(kind=kind, value=value, source=source, field=field))
        for ref in original.verifier_references:
            if re.search(rf"(?<![\w.]){re.escape(ref.lower())}(?![\w])", flat):
                leaks.append(Leak(kind="verifier_reference", value=ref, source="tests/verifiers.json", field=field))
        for span in _shared_spans(text, grams, cfg.ngram):
            leaks.append(Leak(kind="prompt_ngram", value=span, source="instruction.md", field=field))
    return leaks


def check_card_against_task(card: CapabilityCard, task_dir: Path, config: BarrierConfig | None = None) -> list[Leak]:
    return check_card(card, load_original(task_dir, config), config)
