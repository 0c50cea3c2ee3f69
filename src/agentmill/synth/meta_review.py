"""Meta-review every N boxes: coverage against the cards' targets re-weights the scheduler, cards that
keep failing are flagged, systematic critic findings are named, and the guidance for the next batch is
recorded (and shown to the generator).

Deterministic rules, so a run is reproducible:
- a card's multiplier = clamp(1 + (mean progress - its progress), 0.25, 2.0), where progress =
  accepted / target: cards ahead of the others slow down, cards behind speed up;
- a card with at least `flag_after_failures` finished boxes and no acceptance is flagged and paused
  (multiplier 0): its budget goes to cards that can still be served;
- a diagnosis category behind at least half of the diagnoses since the last review is systematic;
- repetition and missing capability dimensions (coverage.py) are reported and turned into guidance.
"""

from __future__ import annotations

import json
from collections import Counter

from agentmill.synth.coverage import coverage, guidance
from agentmill.synth.scheduler import Scheduler
from agentmill.synth.store import SynthStore


def review_due(store: SynthStore, every: int) -> int | None:
    """The multiple of `every` finished target boxes a review is owed for, if one is: counted in the store,
    so a resumed run (or boxes that finished together) neither skips a mark nor reviews one twice."""
    mark = store.finished_boxes("target") // every * every
    return mark if mark > int(store.get_meta("reviewed_at_boxes") or 0) else None


def review_if_due(store: SynthStore, scheduler: Scheduler, every: int, flag_after: int) -> dict | None:
    mark = review_due(store, every)
    return None if mark is None else meta_review(store, scheduler, flag_after, at_boxes=mark)


def meta_review(store: SynthStore, scheduler: Scheduler, flag_after: int, *, at_boxes: int | None = None) -> dict:
    """Review now; `at_boxes` is the cadence mark it is recorded for (default: the finished target boxes)."""
    boxes = store.finished_boxes("target") if at_boxes is None else at_boxes
    cards = store.cards()
    accepted = store.accepted_counts()
    progress = {
        c["card_id"]: (accepted.get(c["card_id"], 0) / c["target_count"]) if c["target_count"] else 1.0 for c in cards
    }
    mean = sum(progress.values()) / len(progress) if progress else 0.0
    finished = {
        r["card_id"]: r["n"]
        for r in store.rows(
            "SELECT card_id, COUNT(*) AS n FROM candidates WHERE kind = 'target' AND state IN ('accepted', 'rejected') GROUP BY card_id"
        )
    }
    # the diagnoses written since the last review (by row, not by time: an attempt that started before
    # the last review but was diagnosed after it is still news)
    last = store.rows("SELECT review FROM meta_reviews ORDER BY n DESC LIMIT 1")
    since = json.loads(last[0]["review"]).get("diagnoses_upto", 0) if last else 0
    recent = store.rows("SELECT rowid AS id, category FROM diagnoses WHERE rowid > ? ORDER BY rowid", (since,))
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
    cov = coverage(store)
    lines += guidance(cov)
    review = {
        "after_boxes": boxes,
        "progress": {k: round(v, 3) for k, v in progress.items()},
        "multipliers": weights,
        "over_represented": over,
        "gaps": gaps,
        "flagged": flagged,
        "diagnoses": dict(counts),
        "systematic": systematic,
        "guidance": " ".join(lines),
        **cov,
        "diagnoses_upto": recent[-1]["id"] if recent else since,
    }
    store.add_meta_review(boxes, review)
    return review
