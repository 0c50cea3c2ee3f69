"""What the meta-review says about the accepted set beyond per-card weights: repetition (candidates
refused as repeats of accepted samples; the most alike pair of a card's accepted samples) and missing
capability dimensions (a card's tools no accepted sample calls; the axes on which all of a card's
accepted samples are the same). The paper's meta-review asks both: do examples repeat, and which
dimensions of the capability are not covered yet."""

from __future__ import annotations

import json
from itertools import combinations

from agentmill.synth.dedupe import AXES, axis_values, similarity
from agentmill.synth.store import SynthStore

REPEAT_CODES = ("duplicate", "near_duplicate", "variant_unchanged")


def coverage(store: SynthStore) -> dict:
    repeats = {
        r["card_id"]: r["n"]
        for r in store.rows(
            "SELECT c.card_id, COUNT(*) AS n FROM gate_results g JOIN attempts a USING (attempt_id) "
            f"JOIN candidates c USING (candidate_id) WHERE g.passed = 0 AND g.code IN ({','.join('?' * len(REPEAT_CODES))}) "
            "GROUP BY c.card_id",
            REPEAT_CODES,
        )
    }
    by_card: dict[str, list] = {}
    for cand in store.accepted():
        by_card.setdefault(cand.card_id, []).append(cand)
    unused_tools, fixed_axes, most_alike = {}, {}, {}
    for c in store.cards():
        cid, samples = c["card_id"], by_card.get(c["card_id"], [])
        if not samples:
            continue
        called = {call.tool for s in samples for call in s.body.calls}
        missing = [t for t in json.loads(c["card"])["tools"] if t not in called]
        if missing:
            unused_tools[cid] = missing
        if len(samples) >= 2:
            values = [axis_values(s.body) for s in samples]
            same = [axis for axis in AXES if len({v[axis] for v in values}) == 1]
            if same:
                fixed_axes[cid] = same
            a, b = max(combinations(samples, 2), key=lambda p: similarity(p[0].body, p[1].body))
            most_alike[cid] = {
                "pair": [a.candidate_id, b.candidate_id],
                "similarity": round(similarity(a.body, b.body), 3),
            }
    return {"repeats": repeats, "most_alike": most_alike, "unused_tools": unused_tools, "fixed_axes": fixed_axes}


def guidance(cov: dict) -> list[str]:
    lines = []
    if cov["repeats"]:
        n = sum(cov["repeats"].values())
        lines.append(
            f"{n} candidate{'s' if n != 1 else ''} repeated accepted samples: write a new request over "
            "different records, with a different seed state and call sequence."
        )
    for cid, tools in sorted(cov["unused_tools"].items()):
        lines.append(f"No accepted sample yet uses {', '.join(tools)} (card {cid}): exercise them.")
    for cid, axes in sorted(cov["fixed_axes"].items()):
        lines.append(f"The accepted samples of card {cid} all share the same {', '.join(axes)}: vary them.")
    return lines
