"""Stage: mixing. Top-N sources by a ranking, `budget / N` tasks from each; sampling without
replacement, and upsampling (cycled copies, or draws weighted by a task score) when a source is
short. Seeded: the same recipe gives the same mix."""

from __future__ import annotations

import json
import random
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.schema import Mix, Recipe
from agentmill.recipe.stage import Stage, StageContext, register_stage
from agentmill.tasks.hashing import hash_file, hash_text


def rank_sources(
    tasks: list[TaskEntry], mix: Mix, scores: dict[str, float | None], ranking_table: Path | None
) -> list[str]:
    present = list(dict.fromkeys(t.source for t in tasks))
    if mix.ranking:
        unknown = [s for s in mix.ranking if s not in present]
        if unknown:
            raise AgentmillError(f"mix.ranking: unknown or empty sources {unknown}")
        return list(mix.ranking) + [s for s in present if s not in mix.ranking]
    if ranking_table is not None:
        table = _table_scores(ranking_table)
        return sorted(present, key=lambda s: (-table.get(s, float("-inf")), present.index(s)))
    if any(scores.get(s) is not None for s in present):

        def score(s: str) -> float:
            value = scores.get(s)
            return value if value is not None else float("-inf")

        return sorted(present, key=lambda s: (-score(s), present.index(s)))
    return present


def _table_scores(path: Path) -> dict[str, float]:
    """Normalised scores per variant from an ablation results.json ({variant: {benchmark: [scores]}})."""
    from agentmill.recipe.table import compute_table

    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise AgentmillError(f"mix.ranking_table {path}: {e}") from None
    return {row.variant: row.normalized for row in compute_table(results)}


def quotas(budget: int, n: int) -> list[int]:
    base, extra = divmod(budget, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def mix_tasks(tasks: list[TaskEntry], mix: Mix, *, seed: int, order: list[str]) -> tuple[list[TaskEntry], StageReport]:
    report = StageReport(stage="mix", kind="mix", count_in=len(tasks))
    chosen_sources = order[: mix.top_n] if mix.top_n else order
    for s in order[len(chosen_sources) :]:
        report.dropped += [
            Drop(name=t.name, reason=f"source '{s}' not in the top {mix.top_n}") for t in tasks if t.source == s
        ]
    by_source = {s: [t for t in tasks if t.source == s] for s in chosen_sources}
    budget = mix.budget or sum(len(v) for v in by_source.values())
    out: list[TaskEntry] = []
    for source, quota in zip(
        chosen_sources,
        quotas(budget, len(chosen_sources)) if mix.budget else [len(by_source[s]) for s in chosen_sources],
    ):
        pool = by_source[source]
        rng = random.Random(int(hash_text(str(seed), source)[:12], 16))
        if len(pool) >= quota:
            picked = rng.sample(pool, quota)
            picked.sort(key=pool.index)  # keep source order: stable output for equal seeds
            report.dropped += [
                Drop(name=t.name, reason=f"over the quota of {quota} for '{source}'") for t in pool if t not in picked
            ]
            out += picked
            continue
        out += pool
        short = quota - len(pool)
        if mix.upsample == "none" or not pool:
            report.notes.append(f"source '{source}': {len(pool)} tasks for a quota of {quota}; not upsampled")
            continue
        if mix.upsample == "cycle":
            order_ = pool[:]
            rng.shuffle(order_)
            extra = [order_[i % len(order_)] for i in range(short)]
        else:  # weights: draw the shortfall in proportion to each task's weight
            extra = rng.choices(pool, weights=[max(t.weight, 1e-9) for t in pool], k=short)
        copies: dict[str, int] = {}
        for t in extra:
            copies[t.name] = copies.get(t.name, 0) + 1
            out.append(t.model_copy(update={"name": f"{t.name}#copy{copies[t.name]}"}))
        report.notes.append(f"source '{source}': upsampled {len(pool)} tasks to {quota} ({mix.upsample})")
    report.count_out = len(out)
    return out, report


@register_stage
class MixStage(Stage):
    """Top-N sources by ranking, budget / N from each (needs the whole task set: it gathers its input)."""

    name = kind = "mix"
    consumes = produces = "tasks"

    def __init__(self, recipe: Recipe):
        self.recipe, self.step = recipe, "mix"
        self.table = recipe.resolve(recipe.mix.ranking_table)

    def settings(self):
        return {
            "mix": self.recipe.mix.model_dump(),
            "seed": self.recipe.recipe.seed,
            "scores": {s.name: s.score for s in self.recipe.sources},
            "table": hash_file(self.table) if self.table and self.table.exists() else None,
        }

    def describe(self) -> str:
        m = self.recipe.mix
        return f"mix: top {m.top_n or 'all'} sources, budget {m.budget or 'all'}"

    async def run(self, records, ctx: StageContext):
        tasks = [t async for t in records]
        r = self.recipe
        order = rank_sources(tasks, r.mix, {s.name: s.score for s in r.sources}, self.table)
        out, report = mix_tasks(tasks, r.mix, seed=r.recipe.seed, order=order)
        ctx.report.dropped += report.dropped
        ctx.report.notes += report.notes + ["source ranking: " + ", ".join(order)]
        for t in out:
            yield t
