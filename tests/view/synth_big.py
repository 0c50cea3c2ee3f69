"""A large synthesis store written straight into SynthStore's schema (fast: no models, no sandboxes),
for the viewer's query-plan and paging checks."""

from __future__ import annotations

import json
import random
from pathlib import Path

from agentmill.synth.store import SynthStore

GATES = ("lint", "semantic", "positive", "negative", "ballot")
FAIL_CODES = {
    "lint": "missing_entity",
    "semantic": "unrealistic",
    "positive": "reference_error",
    "negative": "mutant_survived",
    "ballot": "too_easy",
}


def big_synth_store(out: Path, cards: int = 200, per_card: int = 100) -> dict[str, int]:
    """cards x per_card target candidates, each with 1-2 attempts and their gate results; every
    accepted target seeds one multiply variant. Returns counts to check the routes against."""
    rng = random.Random(7)
    store = SynthStore(out)
    db = store.db
    counts = {"candidates": 0, "accepted": 0, "failed_negative": 0}
    card_rows, cand, att, gates, acc = [], [], [], [], []
    attempt_id = 0
    for k in range(cards):
        cid = f"card-{k:04d}"
        card_rows.append((cid, f"eval-{k}", json.dumps({"card_id": cid}), per_card))
        for i in range(per_card):
            tid = f"{cid}-s{i:04d}"
            fail_at = rng.choice((None, None, *GATES))
            accepted = fail_at is None or rng.random() < 0.5
            rows = [(tid, "target", None)] + ([(tid + "-m0", "multiply", tid)] if accepted else [])
            for cand_id, kind, parent in rows:
                cand.append((cand_id, cid, kind, parent, "accepted" if accepted or kind == "multiply" else "rejected"))
                for n in range(2 if fail_at and kind == "target" else 1):
                    attempt_id += 1
                    att.append((attempt_id, cand_id, n, "generate" if n == 0 else "repair"))
                    for g in GATES:
                        failed = kind == "target" and n == 0 and g == fail_at
                        gates.append((attempt_id, g, 0 if failed else 1, FAIL_CODES[g] if failed else "ok"))
                        if failed:
                            counts["failed_negative"] += g == "negative"
                            break
                if accepted or kind == "multiply":
                    acc.append((cand_id, cid, kind, parent, attempt_id))
    db.execute("BEGIN")
    db.executemany("INSERT INTO cards (card_id, source_task, card, target_count) VALUES (?, ?, ?, ?)", card_rows)
    db.executemany(
        "INSERT INTO candidates (candidate_id, card_id, kind, parent_id, state, started) VALUES (?, ?, ?, ?, ?, 0)",
        cand,
    )
    db.executemany("INSERT INTO attempts (attempt_id, candidate_id, n, origin, started) VALUES (?, ?, ?, ?, 0)", att)
    db.executemany(
        "INSERT INTO gate_results (attempt_id, gate, passed, code, fault, seconds) VALUES (?, ?, ?, ?, 'candidate', 0)",
        gates,
    )
    db.executemany("INSERT INTO acceptances VALUES (?, ?, ?, ?, ?, '{}', 0)", acc)
    db.execute("COMMIT")
    store.close()
    counts.update(candidates=len(cand), accepted=len(acc), gate_results=len(gates))
    return counts
