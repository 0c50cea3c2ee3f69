"""Drop near-duplicate instructions: MinHash over word 3-grams, LSH banding, Jaccard confirmed.

Greedy and deterministic: tasks are visited in input order; a task whose estimated Jaccard
similarity with an already kept task reaches the threshold is dropped, naming that kept task
(the earliest one); otherwise it is kept and indexed.
"""

from __future__ import annotations

import asyncio

from pydantic import Field

from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.stages.task_filters.base import (
    FilterContext,
    FilterParams,
    copy_entry,
    parse_params,
    report,
    words,
)
from agentmill.recipe.stages.task_filters.minhash import LSHIndex, jaccard_estimate, shingles, signature

KIND = "dedupe"


class Params(FilterParams):
    threshold: float = Field(0.8, gt=0, le=1)  # estimated Jaccard similarity at which two tasks are duplicates


def near_duplicates(instructions: list[str], threshold: float) -> list[tuple[int, float] | None]:
    """For each instruction: None if kept, else (index of the kept instruction it duplicates, similarity)."""
    index = LSHIndex(threshold)
    kept: dict[int, int] = {}  # index -> signature of every kept instruction
    memo: dict[str, int] = {}  # exact repeats (after normalisation) are hashed once
    out: list[tuple[int, float] | None] = []
    for i, text in enumerate(instructions):
        toks = words(text)
        norm = " ".join(toks)
        sig = memo.get(norm)
        if sig is None:
            sig = memo[norm] = signature(shingles(toks))
        keys = index.keys(sig)
        match = None
        for j in index.candidates(keys):
            sim = jaccard_estimate(sig, kept[j])
            if sim >= threshold:
                match = (j, sim)
                break
        out.append(match)
        if match is None:
            kept[i] = sig
            index.add(i, keys)
    return out


async def dedupe(tasks: list[TaskEntry], params: dict, ctx: FilterContext) -> tuple[list[TaskEntry], StageReport]:
    p = parse_params(KIND, Params, params)
    matches = await asyncio.to_thread(near_duplicates, [t.instruction for t in tasks], p.threshold)
    kept: list[TaskEntry] = []
    dropped: list[Drop] = []
    for task, match in zip(tasks, matches):
        if match is None:
            kept.append(copy_entry(task))
        else:
            j, sim = match
            dropped.append(
                Drop(
                    name=task.name,
                    reason=f"near-duplicate of {tasks[j].name} (estimated Jaccard {sim:.2f} >= {p.threshold:g})",
                )
            )
    return kept, report(KIND, tasks, kept, dropped)
