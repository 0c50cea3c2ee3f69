"""What every task filter shares: its context, param validation, prompts, bounded concurrency, reports."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from agentmill.errors import AgentmillError
from agentmill.images import ImageBuilder
from agentmill.recipe.llm_cache import CachedModel
from agentmill.recipe.records import Drop, StageReport, TaskEntry

PACKAGED_PROMPTS = Path(__file__).resolve().parents[2] / "prompts"

T = TypeVar("T")
R = TypeVar("R")
P = TypeVar("P", bound=BaseModel)


@dataclass(kw_only=True)
class FilterContext:
    """What a filter may use. `prompts_dir` overrides the packaged prompt files, file by file."""

    model: CachedModel | None = None
    builder: ImageBuilder | None = None
    concurrency: int = 4
    workdir: Path
    prompts_dir: Path | None = None


class FilterParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


def parse_params(kind: str, cls: type[P], params: dict | None) -> P:
    """Validate a filter's params; a bad one raises AgentmillError naming the filter and the key."""
    if params is not None and not isinstance(params, dict):
        raise AgentmillError(f"task filter '{kind}': params must be a mapping, got {type(params).__name__}")
    try:
        return cls.model_validate(params or {})
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "params"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            known = ", ".join(cls.model_fields)
            msg = f"unknown param (known: {known})" if known else "unknown param (this filter takes none)"
        elif "input" in err and err["type"] != "missing":
            msg = f"{msg} (got {err['input']!r})"
        raise AgentmillError(f"task filter '{kind}': param '{key}': {msg}") from None


def bad_param(kind: str, key: str, problem: str) -> AgentmillError:
    return AgentmillError(f"task filter '{kind}': param '{key}': {problem}")


def require_model(kind: str, ctx: FilterContext) -> CachedModel:
    if ctx.model is None:
        raise AgentmillError(f"task filter '{kind}' needs a model (none configured)")
    return ctx.model


async def ask(
    model: CachedModel, kind: str, task: TaskEntry, messages: list[dict], *, json_schema: dict | None = None
) -> str:
    """The model's answer; an endpoint that fails after its retries stops the filter, naming the task
    (an outage is not a verdict on the task, and a rerun resumes from the answer cache)."""
    try:
        return await model.ask(messages, json_schema=json_schema)
    except AgentmillError as e:
        raise AgentmillError(f"task filter '{kind}': task {task.name}: {e}") from e


def load_prompt(name: str, ctx: FilterContext, *, placeholders: Sequence[str] = ("instruction",)) -> str:
    """The prompt file `name` from ctx.prompts_dir if it has one, else the packaged default."""
    path = ctx.prompts_dir / name if ctx.prompts_dir is not None else None
    if path is None or not path.is_file():
        path = PACKAGED_PROMPTS / name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AgentmillError(f"{path}: cannot read prompt: {e}") from None
    for p in placeholders:
        if "{" + p + "}" not in text:
            raise AgentmillError(f"{path}: prompt lacks the {{{p}}} placeholder")
    return text


def fill(template: str, **values: str) -> str:
    """Replace {name} placeholders only; other braces (JSON examples) stay as written."""
    for k, v in values.items():
        template = template.replace("{" + k + "}", v)
    return template


async def bounded(items: Sequence[T], fn: Callable[[T], Awaitable[R]], concurrency: int) -> list[R]:
    """fn over items, at most `concurrency` at once; results in input order."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(item: T) -> R:
        async with gate:
            return await fn(item)

    return list(await asyncio.gather(*(one(i) for i in items)))


def copy_entry(task: TaskEntry, **update) -> TaskEntry:
    """A fresh TaskEntry: the input is never mutated, nor shares its scores dict with the output."""
    scores = dict(task.scores)
    scores.update(update.pop("scores", {}))
    return task.model_copy(update={"scores": scores, **update})


def report(
    kind: str, tasks: list[TaskEntry], kept: list[TaskEntry], dropped: list[Drop], notes: list[str] | None = None
) -> StageReport:
    return StageReport(
        stage=kind, kind="task_filter", count_in=len(tasks), count_out=len(kept), dropped=dropped, notes=notes or []
    )


_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lowercased word tokens with punctuation stripped (punctuation separates words)."""
    return _WORD.findall(text.lower())


def one_line(text: str | None, limit: int = 240) -> str:
    """The first non-empty line, whitespace collapsed, trimmed to `limit` characters."""
    for line in (text or "").splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def top_k(tasks: list[TaskEntry], key: Callable[[TaskEntry], float], k: int, *, largest: bool) -> set[str]:
    """Names of the k tasks with the largest (or smallest) key; ties broken by name."""
    order = sorted(tasks, key=lambda t: ((-key(t) if largest else key(t)), t.name))
    return {t.name for t in order[:k]}
