"""Ask a model how useful each task is as agent training data (1-100), keep the best.

"Ask-LLM" data selection: a rubric-following judge scores every task; the top K (or every task at
or above a minimum score) survive.
"""

from __future__ import annotations

import json
import re

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

KIND = "askllm"
PROMPT = "askllm.md"
SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 100},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
    "additionalProperties": False,
}


class Params(FilterParams):
    k: int | None = Field(None, ge=1)  # keep the K best
    min_score: float | None = Field(None, ge=0, le=100)  # or keep every task scoring at least this


def parse_score(text: str) -> int | None:
    """The score in a judge's reply: a JSON object's "score" (clamped to 1-100), else the first
    integer from 1 to 100 in the text; None when there is none."""
    for candidate in _json_candidates(text):
        try:
            data = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(data, dict) and "score" in data:
            value = data["score"]
            if isinstance(value, str):
                value = value.strip()
                try:
                    value = float(value)
                except ValueError:
                    continue
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
                return min(100, max(1, round(value)))
    for m in re.finditer(r"(?<![\d.])(\d{1,3})(?![\d.]*\d)", text):
        value = int(m.group(1))
        if 1 <= value <= 100:
            return value
    return None


def _json_candidates(text: str) -> list[str]:
    out = [text.strip()]
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        out.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        out.append(text[start : end + 1])
    return out


def check_params(params: dict) -> Params:
    p = parse_params(KIND, Params, params)
    if (p.k is None) == (p.min_score is None):
        raise bad_param(KIND, "k", "give exactly one of 'k' or 'min_score'")
    return p


async def askllm(tasks: list[TaskEntry], params: dict, ctx: FilterContext) -> tuple[list[TaskEntry], StageReport]:
    p = check_params(params)
    model = require_model(KIND, ctx)
    template = load_prompt(PROMPT, ctx)

    async def judge(task: TaskEntry) -> str:
        messages = [{"role": "user", "content": fill(template, instruction=task.instruction)}]
        return await ask(model, KIND, task, messages, json_schema=SCHEMA)

    replies = await bounded(tasks, judge, ctx.concurrency)
    notes: list[str] = []
    scored: list[TaskEntry] = []
    unparseable: set[str] = set()
    for task, reply in zip(tasks, replies):
        score = parse_score(reply)
        if score is None:
            unparseable.add(task.name)
            snippet = " ".join(reply.split())[:80]
            notes.append(f"{task.name}: unparseable askllm reply, scored 0: {snippet!r}")
            score = 0
        scored.append(copy_entry(task, scores={KIND: float(score)}))

    def why(t: TaskEntry) -> str:
        s = int(t.scores[KIND])
        return f"askllm score {s}" + (" (unparseable reply)" if t.name in unparseable else "")

    dropped: list[Drop] = []
    if p.k is not None:
        chosen = top_k(scored, lambda t: t.scores[KIND], p.k, largest=True)
        kept = [t for t in scored if t.name in chosen]
        cutoff = min((int(t.scores[KIND]) for t in kept), default=0)
        dropped = [
            Drop(name=t.name, reason=f"{why(t)}: not in the top {p.k} (cutoff {cutoff})")
            for t in scored
            if t.name not in chosen
        ]
    else:
        min_score = p.min_score
        if min_score is None:  # the params say exactly one of the two
            raise bad_param(KIND, "k", "give exactly one of 'k' or 'min_score'")
        kept = [t for t in scored if t.scores[KIND] >= min_score]
        dropped = [
            Drop(name=t.name, reason=f"{why(t)} below min_score {min_score:g}")
            for t in scored
            if t.scores[KIND] < min_score
        ]
    return kept, report(KIND, tasks, kept, dropped, notes)
