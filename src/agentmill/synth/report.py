"""`agentmill synth report OUT`: one self-contained HTML page of a synthesis run, read from its store.

Sections: the funnel per gate (attempts in, passed, failures by code), critic diagnoses, coverage of
each card against its target (target samples and multiply variants), ballot outcomes, cost and time
per model role and per gate, meta-reviews (the guidance given), cards the information barrier refused.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Protocol

from agentmill.recipe.report import STYLE, bar_chart, esc
from agentmill.runtime.atomic import write_text_atomic
from agentmill.synth.store import SynthStore

GATE_ORDER = [
    "generate",
    "parse",
    "novelty",
    "contamination",
    "lint",
    "semantic",
    "positive",
    "completeness",
    "negative",
    "ballot",
    "accept",
]


class StoreRows(Protocol):
    """What the funnel reads: SynthStore, or the viewer's read-only twin of it."""

    def rows(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]: ...

    def cards(self) -> list[dict]: ...

    def get_meta(self, key: str) -> str | None: ...


def funnel(store: StoreRows) -> list[dict]:
    """[{gate, entered, passed, failed: {code: n}}] in gate order, then 'accepted' (candidates)."""
    # counted in SQL: a store holds hundreds of thousands of results, and the viewer asks on every page
    rows = store.rows("SELECT gate, passed, code, COUNT(*) AS n FROM gate_results GROUP BY gate, passed, code")
    out = []
    barrier = store.rows("SELECT leaks FROM barrier")
    if barrier or store.get_meta("diagnosis"):
        kinds = Counter(json.loads(b["leaks"])[0]["kind"] for b in barrier)
        out.append(
            {
                "gate": "barrier",
                "entered": len(store.cards()) + len(barrier),
                "passed": len(store.cards()),
                "failed": dict(kinds),
            }
        )
    gates = GATE_ORDER + sorted({r["gate"] for r in rows} - set(GATE_ORDER))
    for g in gates:
        mine = [r for r in rows if r["gate"] == g]
        if not mine and g in ("generate", "parse", "accept"):  # rows only when a reply failed / a late repeat
            continue
        out.append(
            {
                "gate": g,
                "entered": sum(r["n"] for r in mine),
                "passed": sum(r["n"] for r in mine if r["passed"]),
                "failed": {r["code"]: r["n"] for r in mine if not r["passed"]},
            }
        )
    states = {r["state"]: r["n"] for r in store.rows("SELECT state, COUNT(*) AS n FROM candidates GROUP BY state")}
    out.append(
        {
            "gate": "accepted",
            "entered": sum(states.values()),
            "passed": states.get("accepted", 0),
            "failed": {st: n for st, n in states.items() if st != "accepted"},
        }
    )
    return out


def coverage(store: SynthStore) -> list[dict]:
    acc = Counter((r["card_id"], r["kind"]) for r in store.rows("SELECT card_id, kind FROM acceptances"))
    boxes = Counter(r["card_id"] for r in store.rows("SELECT card_id FROM candidates"))
    return [
        {
            "card": c["card_id"],
            "source_task": c["source_task"],
            "target": c["target_count"],
            "accepted": acc[(c["card_id"], "target")],
            "variants": acc[(c["card_id"], "multiply")],
            "boxes": boxes[c["card_id"]],
            "multiplier": c["multiplier"],
            "flagged": c["flagged"] or "",
        }
        for c in store.cards()
    ]


def _table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fmt_failed(failed: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(failed.items(), key=lambda kv: -kv[1])) or "-"


def render(store: SynthStore) -> str:
    f = funnel(store)
    parts = [f"<h1>Synthesis report</h1><p class=muted>{esc(store.out)}</p>"]
    parts.append(
        "<section><h2>Funnel per gate</h2>"
        + bar_chart(
            [r["gate"] for r in f],
            [r["passed"] for r in f],
            ghosts=[r["entered"] for r in f],
            value_text=[f"{r['passed']}/{r['entered']}" for r in f],
            caption="passed of entered",
        )
        + _table(
            ["gate", "entered", "passed", "failed (by code)"],
            [[r["gate"], r["entered"], r["passed"], _fmt_failed(r["failed"])] for r in f],
        )
        + "</section>"
    )
    diag = store.rows("SELECT category, by, COUNT(*) AS n FROM diagnoses GROUP BY category, by ORDER BY n DESC")
    parts.append(
        "<section><h2>Critic diagnoses</h2>"
        + _table(["category", "by", "count"], [[d["category"], d["by"], d["n"]] for d in diag])
        + "</section>"
    )
    cov = coverage(store)
    parts.append(
        "<section><h2>Coverage against targets</h2>"
        + bar_chart(
            [c["card"] for c in cov],
            [c["accepted"] for c in cov],
            ghosts=[c["target"] for c in cov],
            value_text=[f"{c['accepted']}/{c['target']}" for c in cov],
            caption="accepted of target",
        )
        + _table(
            ["card", "source task", "target", "accepted", "variants", "boxes", "weight", "flagged"],
            [list(c.values()) for c in cov],
        )
        + "</section>"
    )
    ballots = [json.loads(r["details"]) for r in store.rows("SELECT details FROM gate_results WHERE gate = 'ballot'")]
    # trials run per role: the ballot stops early once its verdict is known (gates/ballot.py)
    pairs = Counter(
        (b["target_solves"], b.get("target_trials", b.get("k")), b["solver_solves"], b.get("solver_trials", b.get("k")))
        for b in ballots
        if "target_solves" in b
    )
    parts.append(
        "<section><h2>Ballot outcomes</h2>"
        + _table(
            ["target solves", "of target trials", "solver solves", "of solver trials", "ballots"],
            [[t, tn, s, sn, n] for (t, tn, s, sn), n in sorted(pairs.items(), key=str)],
        )
        + "</section>"
    )
    usage = store.rows("SELECT * FROM usage ORDER BY role")
    gate_time = store.rows("SELECT gate, COUNT(*) AS n, SUM(seconds) AS s FROM gate_results GROUP BY gate")
    parts.append(
        "<section><h2>Cost and time</h2><p>Wall time: "
        + esc(f"{float(store.get_meta('seconds') or 0):.1f}")
        + " s</p>"
        + _table(
            ["role", "requests", "prompt tokens", "completion tokens", "cost (USD)"],
            [
                [u["role"], u["requests"], u["prompt_tokens"], u["completion_tokens"], f"{u['cost_usd']:.4f}"]
                for u in usage
            ],
        )
        + _table(
            ["gate", "runs", "seconds", "mean seconds"],
            [[g["gate"], g["n"], f"{g['s']:.2f}", f"{g['s'] / g['n']:.2f}"] for g in gate_time],
        )
        + "</section>"
    )
    reviews = store.rows("SELECT after_boxes, review FROM meta_reviews ORDER BY n")
    parts.append(
        "<section><h2>Meta-reviews</h2>"
        + _table(
            ["after boxes", "flagged", "systematic", "repeats", "guidance"],
            [
                [
                    r["after_boxes"],
                    ", ".join(json.loads(r["review"])["flagged"]) or "-",
                    ", ".join(json.loads(r["review"])["systematic"]) or "-",
                    sum(json.loads(r["review"]).get("repeats", {}).values()),
                    json.loads(r["review"])["guidance"] or "-",
                ]
                for r in reviews
            ],
        )
        + "</section>"
    )
    problems = [p for p in (store.get_meta("card_problems") or "").splitlines() if p]
    if problems:
        parts.append(
            "<section><h2>Cards not used</h2><ul>" + "".join(f"<li>{esc(p)}</li>" for p in problems) + "</ul></section>"
        )
    barrier = store.rows("SELECT card_id, source_task, leaks FROM barrier")
    if barrier:
        parts.append(
            "<section><h2>Cards refused by the information barrier</h2>"
            + _table(
                ["card", "source task", "leaks"],
                [
                    [
                        b["card_id"],
                        b["source_task"],
                        "; ".join(f"{x['kind']} {x['value']!r} in {x['field']}" for x in json.loads(b["leaks"])[:5]),
                    ]
                    for b in barrier
                ],
            )
            + "</section>"
        )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>agentmill synth report</title>'
        f"<style>{STYLE}</style></head><body><main>{''.join(parts)}</main></body></html>\n"
    )


def write_report(out_dir: Path, dest: Path | None = None) -> Path:
    store = SynthStore.open_existing(out_dir)
    try:
        dest = Path(dest) if dest else Path(out_dir) / "report.html"
        if dest.is_dir():
            dest = dest / "report.html"
        write_text_atomic(dest, render(store))
        return dest
    finally:
        store.close()
