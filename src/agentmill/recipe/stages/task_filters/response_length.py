"""Keep the tasks whose reference answer is longest (or shortest) in words, or weight tasks by it.

Lengths are counted in whitespace-separated words (no tokenizer is involved), and reported as words.

Long answers from a reference model mark tasks that take many steps: OpenThoughts-Agent found
selecting (or upsampling) them by response length a strong task filter.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.stages.task_filters.base import (
    FilterContext,
    FilterParams,
    ask,
    bad_param,
    bounded,
    copy_entry,
    fill,
    load_prompt,
    parse_params,
    report,
    require_model,
    top_k,
)

KIND = "response_length"
PROMPT = "response_length.md"


class Params(FilterParams):
    keep: Literal["longest", "shortest", "weights"]
    k: int | None = Field(None, ge=1)  # how many to keep, for longest/shortest


def _params(params: dict) -> Params:
    p = parse_params(KIND, Params, params)
    if p.keep != "weights" and p.k is None:
        raise bad_param(KIND, "k", f"required with keep={p.keep!r}")
    if p.keep == "weights" and p.k is not None:
        raise bad_param(KIND, "k", "not used with keep='weights' (every task is kept and weighted)")
    return p


async def response_length(
    tasks: list[TaskEntry], params: dict, ctx: FilterContext
) -> tuple[list[TaskEntry], StageReport]:
    p = _params(params)
    model = require_model(KIND, ctx)
    template = load_prompt(PROMPT, ctx)

    async def measure(task: TaskEntry) -> int:
        answer = await ask(
            model, KIND, task, [{"role": "user", "content": fill(template, instruction=task.instruction)}]
        )
        return len(answer.split())

    lengths = await bounded(tasks, measure, ctx.concurrency)
    scored = [copy_entry(t, scores={"response_length": float(n)}) for t, n in zip(tasks, lengths)]
    notes: list[str] = []
    if p.keep == "weights":
        # proportional to length in words, a zero-length answer counted as one word so no weight is 0
        floored = [max(n, 1) for n in lengths]
        mean = sum(floored) / len(floored) if floored else 1.0
        kept = [t.model_copy(update={"weight": n / mean}) for t, n in zip(scored, floored)]
        if any(n == 0 for n in lengths):
            notes.append(f"{sum(n == 0 for n in lengths)} empty answer(s) weighted as one word")
        return kept, report(KIND, tasks, kept, [], notes)

    largest = p.keep == "longest"
    if p.k is None:  # the params require it for longest/shortest
        raise bad_param(KIND, "k", f"required with keep={p.keep!r}")
    chosen = top_k(scored, lambda t: t.scores["response_length"], p.k, largest=largest)
    kept = [t for t in scored if t.name in chosen]
    dropped: list[Drop] = []
    if kept:
        edge = (min if largest else max)(int(t.scores["response_length"]) for t in kept)
        for t in scored:
            if t.name not in chosen:
                n = int(t.scores["response_length"])
                dropped.append(
                    Drop(name=t.name, reason=f"response length {n} words: not among the {p.k} {p.keep} (cutoff {edge})")
                )
    return kept, report(KIND, tasks, kept, dropped, notes)
