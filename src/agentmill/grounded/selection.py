"""Selection arms for rejection-sampling fine-tuning: among k rollouts per query pick one with the
anchored judge (sees anchors and verification; kept only above a threshold), the unanchored judge
(rubric text only) or at random. All three arms use the same queries (those the anchored arm
keeps), the same candidates and so the same budget."""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict


class Candidate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: str
    anchored: float  # anchored judge quality
    unanchored: float  # unanchored judge quality


def select_arms(pool: dict[str, list[Candidate]], *, threshold: float = 0.95, seed: int = 0) -> dict[str, dict[str, str]]:
    """arm -> {query: chosen run}. Ties go to the earlier candidate."""
    rng = random.Random(seed)
    arms: dict[str, dict[str, str]] = {"anchored": {}, "unanchored": {}, "random": {}}
    for query in sorted(pool):
        cands = pool[query]
        if not cands:
            continue
        best = max(range(len(cands)), key=lambda i: (cands[i].anchored, -i))
        if cands[best].anchored <= threshold:
            continue
        arms["anchored"][query] = cands[best].run
        arms["unanchored"][query] = cands[max(range(len(cands)), key=lambda i: (cands[i].unanchored, -i))].run
        arms["random"][query] = cands[rng.randrange(len(cands))].run
    return arms
