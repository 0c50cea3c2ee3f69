"""Selection arms for rejection-sampling fine-tuning: among k rollouts per query pick one with the
anchored judge (sees anchors and verification; kept only above a threshold), the unanchored judge
(rubric text only) or at random. All three arms use the same queries (those the anchored arm
keeps), the same candidates and so the same budget."""

from __future__ import annotations

import random
import tomllib
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentmill.errors import AgentmillError


class Candidate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: str
    anchored: float  # anchored judge quality
    unanchored: float  # unanchored judge quality


def select_arms(
    pool: dict[str, list[Candidate]], *, threshold: float = 0.95, seed: int = 0
) -> dict[str, dict[str, str]]:
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


def task_pattern(task_dir: Path) -> str:
    """The execution pattern a grounded task was made for (task.toml [metadata] pattern)."""
    try:
        meta = tomllib.loads((Path(task_dir) / "task.toml").read_text()).get("metadata", {})
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise AgentmillError(f"{task_dir}/task.toml: {e}") from None
    return str(meta.get("pattern") or "(none)")


def balance_queries(task_dirs: list[Path], per_pattern: int, *, seed: int = 0) -> list[Path]:
    """At most `per_pattern` queries of each execution pattern (GraphForge compares the arms on 125
    per pattern), a seeded sample where a pattern has more; so no pattern's volume decides the
    comparison. In the input order."""
    by_pattern: dict[str, list[Path]] = defaultdict(list)
    for d in task_dirs:
        by_pattern[task_pattern(d)].append(d)
    rng = random.Random(seed)
    keep = set()
    for pattern in sorted(by_pattern):
        dirs = by_pattern[pattern]
        keep.update(dirs if len(dirs) <= per_pattern else rng.sample(dirs, per_pattern))
    return [d for d in task_dirs if d in keep]
