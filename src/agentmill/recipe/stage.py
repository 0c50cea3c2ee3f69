"""The Stage interface: every step of a recipe is one object of this shape, registered by name.

A stage is a transform over a stream of records (task entries, or trace records after the
rollout), in the spirit of a data-processing pipeline step: it reads its input as an async
iterator and yields its output, one record at a time. Everything the pipeline does is derived
from the stage objects and nothing else:

- the cache key: `key(upstream_key)` = hash of the stage's name, its upstream's key and
  `settings()` (every choice that decides the output), so the whole plan is known before anything
  runs and `--dry-run` can say what is cached;
- the funnel: the pipeline counts records in and out; the stage adds a reason for every record it
  drops (`ctx.drop`) and notes (`ctx.note`);
- storage: `produces` names the record kind ("tasks" or "traces", see stores.py); a sink
  (`produces = None`) writes its own files into `ctx.out`;
- publishing into the run folder: `publish()`.

Adding a stage: subclass Stage, set `name`, `consumes`, `produces`, implement `settings()` and
`run()`, decorate the class with `@register_stage`, and import its module in `stages/__init__.py`.
This registry imports no stage: `agentmill/recipe/__init__.py` imports the bundled stages, so
importing anything of the recipe package registers them (and no import circle runs through here).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from agentmill.errors import AgentmillError
from agentmill.recipe.cache import stage_key
from agentmill.recipe.records import Drop, StageReport
from agentmill.registry import Registry, UnknownNameError

RecordKind = str  # "tasks" | "traces"


@dataclass
class StageContext:
    """What a running stage may use. Services (model, image builder, progress) are injected."""

    out: Path  # the stage's own folder in the cache (exists while it runs)
    report: StageReport
    say: Callable[[str], None] = lambda _msg: None
    builder: Any = None  # an ImageBuilder, for stages that build environments
    open_model: Callable[[Any], AbstractAsyncContextManager] | None = None  # ModelSpec -> CachedModel
    progress: Callable[[int], Any] | None = None  # total -> hooks with started/finished/close
    run_dir: Path | None = None  # the recipe's run folder
    upstream: list[StageReport] = field(default_factory=list)  # reports of the stages before
    relax: Callable[[str, str], str | None] | None = None  # (step, drop reason) -> how to keep more

    def drop(self, name: str, reason: str) -> None:
        self.report.dropped.append(Drop(name=name, reason=reason))

    def use_model(self, spec: Any) -> AbstractAsyncContextManager:
        """The model `spec` names, open for the block (the pipeline injects the service)."""
        if self.open_model is None:
            raise AgentmillError(f"{self.report.stage}: this stage needs a model, and its context has none")
        return self.open_model(spec)

    def note(self, text: str) -> None:
        self.report.notes.append(text)


class Stage(ABC):
    """One step of a recipe. Subclasses set the class attributes and implement settings() and run()."""

    name: ClassVar[str]  # registry name
    kind: ClassVar[str]  # the funnel's kind column: sources, augment, task_filter, mix, rollout, trace_filters, export
    consumes: ClassVar[RecordKind | None]  # None: reads nothing (a source)
    produces: ClassVar[RecordKind | None]  # None: a sink that writes files

    step: str  # this instance's name in the recipe: unique, names its cache folder and funnel row
    upstream: str | None = None  # the step feeding it; None: the previous step that produces records

    @abstractmethod
    def settings(self) -> Any:
        """Every choice (besides the input) that decides the output, as JSON-able data."""

    @abstractmethod
    def describe(self) -> str:
        """One line for the plan."""

    @abstractmethod
    def run(self, records: AsyncIterator[Any], ctx: StageContext) -> AsyncIterator[Any]:
        """Yield the output records (an async generator)."""

    def key(self, upstream_key: str) -> str:
        return stage_key(self.step, upstream_key, self.settings())

    def publish(self, out: Path, run_dir: Path) -> None:  # noqa: B027 - an optional hook: most stages publish nothing
        """Copy or link what the run folder shows of this stage's output (default: nothing)."""

    def relax(self, reason: str) -> str | None:
        """How to keep more records when this stage dropped the last ones for `reason`."""
        return None


# Stages (and task filters, which are stages of kind "task_filter") by name. The bundled ones register
# themselves when their modules are imported, which the package face (`agentmill/recipe/__init__.py`)
# does; plug-ins declare `agentmill.stages`.
STAGES: Registry[type[Stage]] = Registry("stage", group="agentmill.stages")
StageT = TypeVar("StageT", bound=Stage)


def register_stage(cls: type[StageT]) -> type[StageT]:
    """Class decorator: make a stage available to recipes by its `name`."""
    name = getattr(cls, "name", None)
    if not name:
        raise AgentmillError(f"{cls.__name__}: a stage needs a name")
    STAGES.register(name, cls)
    return cls


def registered() -> dict[str, type[Stage]]:
    """Every registered stage, plug-ins included."""
    return STAGES.all()


def stage_class(name: str, *, where: str, kind: str | None = None) -> type[Stage]:
    """The registered stage called `name` (of `kind` if given), or an error naming the recipe key."""
    stages = registered()
    known = sorted(n for n, c in stages.items() if kind is None or c.kind == kind)
    cls = stages.get(name)
    if cls is None or (kind is not None and cls.kind != kind):
        what = (kind or "stage").replace("_", " ")
        raise UnknownNameError(f"{where}: " + STAGES.unknown_message(name, known=known, what=what))
    return cls


async def aiter_of(items) -> AsyncGenerator[Any, None]:
    """An async iterator over a plain iterable (records read from a store)."""
    for item in items:
        yield item


def in_thread_iter(records: AsyncGenerator[Any, None], loop) -> Iterator[Any]:
    """A plain iterator over `records` for code running in a worker thread (asyncio.to_thread), each
    item fetched on `loop`: sync writers stream an async input without gathering it first."""
    while True:
        future = asyncio.run_coroutine_threadsafe(records.__anext__(), loop)
        while True:
            try:
                item = future.result(timeout=1.0)
                break
            except StopAsyncIteration:
                return
            except concurrent.futures.TimeoutError:
                if not loop.is_running():  # the run was interrupted: do not wait for ever
                    future.cancel()
                    raise RuntimeError("the event loop stopped while a stage was reading its input") from None
        yield item
