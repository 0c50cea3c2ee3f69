"""Meta-review every N boxes: coverage against the cards' targets re-weights the scheduler, cards that
keep failing are flagged, systematic critic findings are named, and the guidance for the next batch is
recorded (and shown to the generator).

Deterministic rules, so a run is reproducible:
- a card's multiplier = clamp(1 + (mean progress - its progress), 0.25, 2.0), where progress =
  accepted / target: cards ahead of the others slow down, cards behind speed up;
- a card with at least `flag_after_failures` finished boxes and no acceptance is flagged and paused
  (multiplier 0): its budget goes to cards that can still be served;
- a diagnosis category behind at least half of the diagnoses since the last review is systematic.
"""

from __future__ import annotations

from collections import Counter

from agentmill.synth.scheduler import Scheduler
from agentmill.synth.store import SynthStore


def meta_review(store: SynthStore, scheduler: Scheduler, flag_after: int) -> dict:
    boxes = store.finished_boxes()
    cards = store.cards()
    accepted = store.accepted_counts()
    progress = {c["card_id"]: (accepted.get(c["card_id"], 0) / c["target_count"]) if c["target_count"] else 1.0 for c in cards}
    mean = sum(progress.values()) / len(progress) if progress else 0.0
    finished = {r["card_id"]: r["n"] for r in store.rows(
        "SELECT card_id, COUNT(*) AS n FROM candidates WHERE kind = 'target' AND state IN ('accepted', 'rejected') GROUP BY card_id")}
    since = store.rows("SELECT COALESCE(MAX(at), 0) AS t FROM meta_reviews")[0]["t"]
    recent = store.rows("SELECT d.category FROM diagnoses d JOIN attempts a USING (attempt_id) WHERE a.started > ?",
                        (since,))
    weights, flagged = {}, {}
    for c in cards:
        cid = c["card_id"]
        m = min(2.0, max(0.25, 1.0 + (mean - progress[cid])))
        if finished.get(cid, 0) >= flag_after and not accepted.get(cid):
            flagged[cid] = f"{finished[cid]} boxes, no acceptance"
            m = 0.0
        weights[cid] = round(m, 3)
        if cid in scheduler.quotas:
            scheduler.set_multiplier(cid, weights[cid])
        store.set_multiplier(cid, weights[cid], flagged.get(cid))
    counts = Counter(r["category"] for r in recent)
    systematic = [cat for cat, n in counts.most_common() if n * 2 >= len(recent) and len(recent) >= 2]
    over = sorted(cid for cid, p in progress.items() if p > mean + 1e-9)
    gaps = sorted(cid for cid, p in progress.items() if p < mean - 1e-9)
    lines = []
    if systematic:
        lines.append("Recent candidates keep failing for: " + ", ".join(systematic) + ". Check these first.")
    if "weak_verifier" in systematic:
        lines.append("Write verifiers that pin every field the task changes and check untouched records stay so.")
    if "state_mismatch" in systematic:
        lines.append("Insert every record the task is about in seed_sql and list it under entities.")
    if "capability_mismatch" in systematic:
        lines.append("Make the workflow need every step of the card; the target solves the current ones.")
    review = {"after_boxes": boxes, "progress": {k: round(v, 3) for k, v in progress.items()}, "multipliers": weights,
              "over_represented": over, "gaps": gaps, "flagged": flagged, "diagnoses": dict(counts),
              "systematic": systematic, "guidance": " ".join(lines)}
    store.add_meta_review(boxes, review)
    return review
