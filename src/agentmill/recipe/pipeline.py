"""`agentmill run RECIPE`: sources -> augment -> task filters -> mix -> rollouts -> trace filters -> export.

Every stage's output is cached under the hash of its upstream key and its own settings, so
changing a later stage reuses every earlier one, and an interrupted run resumes (a rollout
inside its own ledger). Keys depend only on settings and upstream keys, so the whole plan (and
which stages are cached) is known before anything runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmill.images import ImageBuilder
from agentmill.models.session import open_model, served_name
from agentmill.recipe.cache import StageCache, stage_key
from agentmill.recipe.llm_cache import CachedModel
from agentmill.recipe.records import Drop, StageReport, TaskEntry, load_tasks, save_tasks
from agentmill.recipe.schema import ModelSpec, Recipe
from agentmill.recipe.stages.augment import PROMPTS as AUGMENT_PROMPTS, augment_tasks, prompt_text
from agentmill.recipe.stages.mix import mix_tasks, rank_sources
from agentmill.recipe.stages.rollout import rollout_identity, rollout_tasks
from agentmill.recipe.stages.sources import load_sources, source_fingerprint
from agentmill.models.client import SamplingParams
from agentmill.tasks.hashing import hash_file
from agentmill.traces.export import export_run
from agentmill.traces.filters import apply_filters, rules
from agentmill.traces.records import iter_traces
from agentmill.traces.render import render
from agentmill.traces.tokens import TokenCounter


@dataclass
class PlanStep:
    stage: str
    key: str
    cached: bool
    what: str


def model_identity(model: ModelSpec) -> dict:
    return {"model": served_name(model.name), "temperature": model.temperature, "top_p": model.top_p,
            "max_tokens": model.max_tokens}


class Pipeline:
    def __init__(self, recipe: Recipe, raw: dict[str, Any], run_dir: Path, *, cache_dir: Path | None = None, say=None):
        self.recipe, self.raw, self.run_dir = recipe, raw, run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.run_id = f"{int(time.time() * 1000)}-{os.getpid()}"
        self.cache = StageCache(cache_dir or run_dir / "stages", run_dir / "cache.jsonl", self.run_id)
        self.say = say or (lambda _msg: None)
        self.builder = ImageBuilder()

    # -- planning ---------------------------------------------------------------------------

    def plan(self) -> list[PlanStep]:
        r = self.recipe
        steps: list[PlanStep] = []

        def add(stage: str, upstream: str, settings: object, what: str) -> str:
            key = stage_key(stage, upstream, settings)
            steps.append(PlanStep(stage, key, self.cache.done(stage, key) is not None, what))
            return key

        key = add("sources", "", {"sources": [s.model_dump() for s in r.sources], "content": source_fingerprint(r)},
                  f"{len(r.sources)} sources")
        if r.augment.strategies:
            aug_model = r.augment.model or r.model
            prompts = {s: prompt_text(s, r.resolve(r.augment.prompts_dir)) for s in r.augment.strategies}
            key = add("augment", key, {"spec": r.augment.model_dump(exclude={"model"}), "model": model_identity(aug_model),
                                       "prompts": prompts}, f"augment: {', '.join(r.augment.strategies)}")
        for i, f in enumerate(r.task_filters):
            fmodel = f.model or r.model
            key = add(f"filter{i}-{f.kind}", key, {"kind": f.kind, "params": f.params, "model": model_identity(fmodel),
                                                   "prompts": _prompt_digest()}, f"task filter {f.kind}")
        table = r.resolve(r.mix.ranking_table)
        key = add("mix", key, {"mix": r.mix.model_dump(), "seed": r.recipe.seed,
                               "table": hash_file(table) if table and table.exists() else None}, "mix")
        rmodel = r.rollout.model or r.model
        key = add("rollout", key, rollout_identity(r.rollout, rmodel), f"rollout: {r.rollout.agent}")
        key = add("trace_filters", key, r.trace_filters.model_dump(), "trace filters")
        for e in r.exports:
            tok = r.resolve(e.tokenizer)
            add(f"export-{e.format}", key, {**e.model_dump(), "tokenizer": hash_file(tok) if tok and tok.is_file() else e.tokenizer},
                f"export {e.format} -> {e.file}")
        return steps

    # -- running ------------------------------------------------------------------------------

    async def run(self, *, progress=None) -> list[StageReport]:
        r = self.recipe
        plan = self.plan()
        reports: list[StageReport] = []
        tasks: list[TaskEntry] = []
        rollout_dir: Path | None = None
        kept_ids: list[str] = []
        for step in plan:
            out = self.cache.dir(step.stage, step.key)
            cached = self.cache.done(step.stage, step.key)
            self.cache.record(step.stage, step.key, "cached" if cached else "ran")
            if cached is None:
                self.say(f"stage {step.stage}: running ({step.what})")
                out.mkdir(parents=True, exist_ok=True)
                report = await self._run_stage(step, out, tasks, rollout_dir, kept_ids, progress)
                self.cache.finish(step.stage, step.key, report)
            else:
                self.say(f"stage {step.stage}: cached")
                report = cached
            reports.append(report)
            if (out / "tasks.jsonl").exists():
                tasks = load_tasks(out / "tasks.jsonl")
            if step.stage == "rollout":
                rollout_dir = out / "run"
            if step.stage == "trace_filters":
                kept_ids = json.loads((out / "kept.json").read_text())
            if step.stage.startswith("export-"):
                self._publish_export(out)
        self._publish(reports, tasks, rollout_dir)
        return reports

    async def _run_stage(self, step: PlanStep, out: Path, tasks, rollout_dir, kept_ids, progress) -> StageReport:
        r = self.recipe
        if step.stage == "sources":
            new, report = load_sources(r)
        elif step.stage == "augment":
            model = r.augment.model or r.model
            async with self._model(model) as cached:
                new, report = await augment_tasks(tasks, r.augment, cached, out, builder=self.builder,
                                                  prompts_dir=r.resolve(r.augment.prompts_dir))
        elif step.stage.startswith("filter"):
            new, report = await self._task_filter(int(step.stage[6:].split("-")[0]), tasks, out)
            report.stage = step.stage  # filterN-kind: one name per step of the funnel
        elif step.stage == "mix":
            order = rank_sources(tasks, r.mix, {s.name: s.score for s in r.sources}, r.resolve(r.mix.ranking_table))
            new, report = mix_tasks(tasks, r.mix, seed=r.recipe.seed, order=order)
            report.notes.append("source ranking: " + ", ".join(order))
        elif step.stage == "rollout":
            model = r.rollout.model or r.model
            hooks = progress(sum(1 for _ in tasks) * r.rollout.attempts) if progress else None
            report = await rollout_tasks(tasks, r.rollout, model, out / "run", dataset_id=f"recipe:{step.key}",
                                         on_start=hooks.started if hooks else None, on_done=hooks.finished if hooks else None,
                                         say=self.say)
            if hooks:
                hooks.close()
            return report
        elif step.stage == "trace_filters":
            return self._trace_filters(rollout_dir, out)
        else:
            return self._export(step, rollout_dir, out)
        save_tasks(new, out / "tasks.jsonl")
        return report

    @asynccontextmanager
    async def _model(self, spec: ModelSpec):
        """The spec's model, behind the shared answer cache, for the length of one stage."""
        sampling = SamplingParams(temperature=spec.temperature, top_p=spec.top_p, max_tokens=spec.max_tokens)
        async with open_model(spec.name, base_url=spec.base_url, api_key_env=spec.api_key_env, sampling=sampling,
                              concurrency=spec.concurrency, say=self.say) as client:
            cached = CachedModel(client, self.cache.root / "llm_cache.sqlite")
            try:
                yield cached
            finally:
                cached.close()

    async def _task_filter(self, index: int, tasks: list[TaskEntry], out: Path):
        from agentmill.recipe.task_filters import TASK_FILTERS
        from agentmill.recipe.task_filters.base import FilterContext

        r = self.recipe
        spec = r.task_filters[index]
        params = _resolve_paths(spec.params, r)
        needs_model = spec.kind in {"response_length", "askllm"}
        if needs_model:
            async with self._model(spec.model or r.model) as cached:
                ctx = FilterContext(model=cached, builder=self.builder, workdir=out, prompts_dir=r.resolve(r.augment.prompts_dir))
                new, report = await TASK_FILTERS[spec.kind](tasks, params, ctx)
        else:
            ctx = FilterContext(model=None, builder=self.builder, workdir=out, prompts_dir=None)
            new, report = await TASK_FILTERS[spec.kind](tasks, params, ctx)
        return new, report

    def _trace_filters(self, rollout_dir: Path, out: Path) -> StageReport:
        counter = TokenCounter()
        records = list(iter_traces(rollout_dir))
        kept, funnel = apply_filters(records, rules(self.recipe.trace_filters, counter,
                                                    lambda rec: (render(rec.trajectory).messages, None)))
        (out / "kept.json").write_text(json.dumps(sorted(r.trial_id for r in kept)))
        report = StageReport(stage="trace_filters", kind="trace_filters", count_in=len(records), count_out=len(kept))
        kept_ids = {r.trial_id for r in kept}
        for rec in records:
            if rec.trial_id not in kept_ids:
                first_failed = next((s.name for s in funnel[1:] if s.name not in rec.passed_filters), "filtered")
                report.dropped.append(Drop(name=rec.trial_id, reason=first_failed))
        report.notes += [f"{s.name}: kept {s.kept}, dropped {s.dropped} ({s.description})" for s in funnel[1:]]
        return report

    def _export(self, step: PlanStep, rollout_dir: Path, out: Path) -> StageReport:
        r = self.recipe
        spec = next(e for e in r.exports if f"export-{e.format}" == step.stage)
        result = export_run(rollout_dir, spec.format, out / spec.file, spec=r.trace_filters, reasoning=spec.reasoning,
                            tokenizer=r.resolve(spec.tokenizer))
        return StageReport(stage=step.stage, kind="export", count_in=result.funnel[0].kept, count_out=result.rows,
                           notes=[f"{result.rows} rows -> {spec.file}", f"{result.redactions} secrets redacted"])

    def _publish_export(self, out: Path) -> None:
        dest = self.run_dir / "exports"
        dest.mkdir(exist_ok=True)
        for f in out.iterdir():
            if f.is_file() and f.name != "done.json":
                shutil.copy2(f, dest / f.name)

    def _publish(self, reports: list[StageReport], tasks: list[TaskEntry], rollout_dir: Path | None) -> None:
        (self.run_dir / "funnel.json").write_text(json.dumps([rep.model_dump() for rep in reports], indent=2))
        save_tasks(tasks, self.run_dir / "tasks.jsonl")
        if rollout_dir is not None:
            link = self.run_dir / "rollout"
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(os.path.relpath(rollout_dir, self.run_dir))
        import tomli_w

        (self.run_dir / "recipe.toml").write_text(tomli_w.dumps(self.raw))


def _resolve_paths(params: dict, recipe: Recipe) -> dict:
    """Task-filter parameters that name folders (benchmarks) are relative to the recipe file."""
    out = dict(params)
    if "benchmarks" in out:
        out["benchmarks"] = [str(recipe.resolve(p)) for p in out["benchmarks"]]
    return out


def _prompt_digest() -> str:
    folder = AUGMENT_PROMPTS.parent
    h = hashlib.sha256()
    for p in sorted(folder.glob("*.md")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]
