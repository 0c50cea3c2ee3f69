"""`agentmill run RECIPE`: the recipe's stage objects, planned and run over a content-addressed cache.

    sources -> augment -> task filters -> mix -> rollout -> trace filters -> exports

`build_stages` turns a recipe into Stage objects (looked up by name in the registry, their settings
validated); `plan` derives every stage's key from its upstream's key and its settings, so the
whole plan, and which stages are cached, is known before anything runs (`--dry-run`, which writes
nothing). `run` streams each stage's input from its upstream's store and its output into its own,
marks it done in the cache only once it has finished, and derives the funnel from the stages'
reports. Changing one line reruns only the stages at and after it.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.models.client import SamplingParams
from agentmill.models.session import open_model
from agentmill.recipe.cache import StageCache
from agentmill.recipe.llm_cache import CachedModel
from agentmill.recipe.records import StageReport
from agentmill.recipe.schema import ModelSpec, Recipe
from agentmill.recipe.stage import Stage, StageContext, aiter_of, stage_class
from agentmill.recipe.stages.model_identity import model_identity  # noqa: F401  (re-exported)
from agentmill.recipe.stores import STORES
from agentmill.runtime.atomic import write_json_atomic

log = logging.getLogger(__name__)


@dataclass
class PlanStep:
    stage: str  # the step's name: cache folder and funnel row
    key: str
    cached: bool
    what: str
    obj: Stage
    upstream: str | None  # the step whose output it reads


def build_stages(recipe: Recipe, *, where: str = "recipe") -> list[Stage]:
    """The recipe's stages in flow order; an unknown stage or a bad setting raises, naming the key."""

    def make(name: str, *args, key: str | None = None, kind: str | None = None) -> Stage:
        # each stage's constructor takes its own arguments after the recipe
        cls: Callable[..., Stage] = stage_class(
            name, where=f"{where}: {key or name}" + (".kind" if kind else ""), kind=kind
        )
        try:
            return cls(recipe, *args)
        except AgentmillError as e:
            raise AgentmillError(f"{where}: {key or name}: {e}") from None

    stages = [make("sources")]
    if recipe.augment.strategies:
        stages.append(make("augment"))
    filters = [(i, f) for i, f in enumerate(recipe.task_filters)]
    for i, f in filters:
        if f.placement == "before_mix":
            stages.append(make(f.kind, i, key=f"task_filters.{i}", kind="task_filter"))
    stages.append(make("mix"))
    for i, f in filters:  # the paper's filters over the mixed set
        if f.placement == "after_mix":
            stages.append(make(f.kind, i, key=f"task_filters.{i}", kind="task_filter"))
    stages += [make("rollout"), make("trace_filters")]
    stages += [make("export", i, key=f"exports.{i}") for i in range(len(recipe.exports))]
    _link(stages, where)
    return stages


def _link(stages: list[Stage], where: str) -> None:
    """Give every stage its upstream (default: the last stage before it that produces records) and check
    that what it reads is what the upstream writes."""
    by_step: dict[str, Stage] = {}
    last: Stage | None = None
    for s in stages:
        if s.step in by_step:
            raise AgentmillError(f"{where}: two stages named {s.step!r}")
        if s.consumes is not None:
            up = by_step.get(s.upstream) if s.upstream else last
            if up is None or up.produces != s.consumes:
                raise AgentmillError(
                    f"{where}: stage {s.step} reads {s.consumes}, but "
                    f"{'nothing before it' if up is None else up.step + ' writes ' + str(up.produces)}"
                )
            s.upstream = up.step
        by_step[s.step] = s
        if s.produces is not None:
            last = s


class Pipeline:
    def __init__(
        self,
        recipe: Recipe,
        raw: dict[str, Any],
        run_dir: Path,
        *,
        cache_dir: Path | None = None,
        say=None,
        where: str = "recipe",
    ):
        self.recipe, self.raw, self.run_dir, self.where = recipe, raw, Path(run_dir), where
        self.run_id = f"{int(time.time() * 1000)}-{os.getpid()}"
        self.cache = StageCache(
            Path(cache_dir) if cache_dir else self.run_dir / "stages", self.run_dir / "cache.jsonl", self.run_id
        )
        self.say = say or (lambda _msg: None)
        self.stages = build_stages(recipe, where=where)
        self._builder = None

    @property
    def builder(self):
        if self._builder is None:  # made on first use: planning (and --dry-run) writes nothing
            from agentmill.images import ImageBuilder

            self._builder = ImageBuilder()
        return self._builder

    # -- planning: read-only ----------------------------------------------------------------

    def plan(self) -> list[PlanStep]:
        keys: dict[str, str] = {}
        steps = []
        for s in self.stages:
            try:
                key = s.key(keys[s.upstream] if s.upstream else "")
            except (OSError, ValueError) as e:
                raise AgentmillError(f"{self.where}: {s.step}: {e}") from None
            keys[s.step] = key
            steps.append(PlanStep(s.step, key, self.cache.done(s.step, key) is not None, s.describe(), s, s.upstream))
        return steps

    # -- running ------------------------------------------------------------------------------

    async def run(self, *, progress=None) -> list[StageReport]:
        plan = self.plan()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        reports: list[StageReport] = []
        key_of = {p.stage: p.key for p in plan}
        try:
            for step in plan:
                out = self.cache.dir(step.stage, step.key)
                report = self.cache.done(step.stage, step.key)
                if report is not None:
                    self.say(f"stage {step.stage}: cached")
                    log.info("stage %s: cached under key %s", step.stage, step.key)
                    self.cache.record(step.stage, step.key, "cached")
                else:
                    self.say(f"stage {step.stage}: running ({step.what})")
                    upstream = self.cache.dir(step.upstream, key_of[step.upstream]) if step.upstream else None
                    report = await self._run_stage(step, out, upstream, reports, progress)
                step.obj.publish(out, self.run_dir)
                reports.append(report)
        finally:  # a run that stopped still shows the funnel of the stages that finished (the report draws it)
            self._write_funnel(reports)
        self._publish(plan, key_of)
        return reports

    async def _run_stage(
        self, step: PlanStep, out: Path, upstream: Path | None, before: list[StageReport], progress
    ) -> StageReport:
        stage = step.obj
        out.mkdir(parents=True, exist_ok=True)
        report = StageReport(stage=step.stage, kind=stage.kind)
        ctx = StageContext(
            out=out,
            report=report,
            say=self.say,
            builder=self.builder,
            open_model=self._model,
            progress=progress,
            run_dir=self.run_dir,
            upstream=list(before),
            relax=self._relax,
        )
        records: AsyncIterator[Any]
        if not stage.consumes:
            records = aiter_of(())
        elif upstream is None:  # the plan gives every stage that consumes records the step feeding it
            raise AgentmillError(f"{step.stage}: reads {stage.consumes} but no step before it makes them")
        else:
            records = _counted(aiter_of(STORES[stage.consumes](upstream, self.cache.root).read()), report)
        try:
            produced = stage.run(records, ctx)
            if stage.produces:
                report.count_out = await STORES[stage.produces](out, self.cache.root).write(produced)
            else:
                async for _ in produced:
                    pass
        except BaseException as e:  # the log says what happened; the stage is not marked done
            status = "failed" if isinstance(e, Exception) else "interrupted"
            self.cache.record(
                step.stage, step.key, status, error=str(e).splitlines()[0][:300] if str(e) else type(e).__name__
            )
            raise
        self.cache.finish(step.stage, step.key, report)
        self.cache.record(step.stage, step.key, "ran")
        return report

    def _relax(self, step: str, reason: str) -> str | None:
        stage = next((s for s in self.stages if s.step == step), None)
        return stage.relax(reason) if stage else None

    @asynccontextmanager
    async def _model(self, spec: ModelSpec):
        """The spec's model, behind the shared answer cache, for the length of one stage."""
        sampling = SamplingParams(
            temperature=spec.temperature, top_p=spec.top_p, max_tokens=spec.max_tokens, seed=spec.seed
        )
        async with open_model(
            spec.name,
            base_url=spec.base_url,
            api_key_env=spec.api_key_env,
            sampling=sampling,
            concurrency=spec.concurrency,
            say=self.say,
        ) as client:
            cached = CachedModel(client, self.cache.root / "llm_cache.sqlite")
            try:
                yield cached
            finally:
                cached.close()

    def _write_funnel(self, reports: list[StageReport]) -> None:
        write_json_atomic(self.run_dir / "funnel.json", [rep.model_dump() for rep in reports])

    def _publish(self, plan: list[PlanStep], key_of: dict[str, str]) -> None:
        last_tasks = next((p for p in reversed(plan) if p.obj.produces == "tasks"), None)
        if last_tasks is not None:
            shutil.copyfile(
                self.cache.dir(last_tasks.stage, key_of[last_tasks.stage]) / STORES["tasks"].file,
                self.run_dir / "tasks.jsonl",
            )
        import tomli_w

        (self.run_dir / "recipe.toml").write_text(tomli_w.dumps(self.raw))


async def _counted(records: AsyncIterator[Any], report: StageReport) -> AsyncIterator[Any]:
    async for rec in records:
        report.count_in += 1
        yield rec
