"""Stage: teacher rollouts over the mixed task set, in a resumable run folder inside the stage
(`<stage folder>/run`, an ordinary rollout folder: resumable by `agentmill rollout`, readable by
`status`, `export` and `view`); tasks in, one trace per finished trial out.

Finished trials are also kept in the cache's trial store (`<cache>/trials/`), keyed by trial
identity: a later run sharing the cache (another mix budget, seed or filter) reuses every trial
whose identity is unchanged instead of paying the teacher again.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from agentmill.agents import agent_class
from agentmill.agents.registry import supports
from agentmill.errors import AgentmillError, InfraStopError, TaskError
from agentmill.models.client import SamplingParams
from agentmill.models.session import open_model, served_name
from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.schema import ModelSpec, Recipe, Rollout
from agentmill.recipe.stage import Stage, StageContext, register_stage
from agentmill.rollout.commands import interrupted_counts
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.identity import settings_identity
from agentmill.rollout.plan import TaskRef
from agentmill.rollout.runner import preflight, run_rollout
from agentmill.rollout.store import TrialStore
from agentmill.tasks import load_task
from agentmill.traces.records import iter_traces
from agentmill.verify.outcome import Outcome

if TYPE_CHECKING:
    from agentmill.agents.base import Agent


def sampling(model: ModelSpec, rollout: Rollout) -> SamplingParams:
    temperature = rollout.temperature if rollout.temperature is not None else model.temperature
    return SamplingParams(temperature=temperature, top_p=model.top_p, max_tokens=model.max_tokens, seed=model.seed)


def _agent(rollout: Rollout) -> type[Agent]:
    """The rollout's agent class (the registry checked that it declares the Agent attributes)."""
    return agent_class(rollout.agent)


def _model_name(rollout: Rollout, model: ModelSpec) -> str | None:
    return served_name(model.name) if _agent(rollout).needs_model else None


def rollout_identity(rollout: Rollout, model: ModelSpec) -> dict:
    ident = settings_identity(
        agent=rollout.agent,
        agent_version=_agent(rollout).version,
        model=_model_name(rollout, model),
        sampling=sampling(model, rollout),
        max_turns=rollout.max_turns,
        network=rollout.network,
    )
    return {**ident, "attempts": rollout.attempts}


def _executor(rollout: Rollout, say):
    """`[rollout] executor`: None for the local one (the runner's default), else one made by name."""
    if rollout.executor == "local":
        return None
    from agentmill.rollout.executor import make_executor

    try:
        if rollout.executor == "processes":
            return make_executor("processes", concurrency=rollout.concurrency, workers=rollout.workers)
        return make_executor(rollout.executor, concurrency=rollout.concurrency, address=rollout.address, say=say)
    except ValueError as e:
        raise AgentmillError(f"[rollout] executor: {e}") from None


def default_store_dir(run_dir: Path) -> Path:
    """`<cache>/trials` for the pipeline's layout `<cache>/rollout/<key>/run`."""
    return run_dir.parent.parent.parent / "trials"


def sourced_name(task) -> str:
    """The name a task's hash is recorded under: sources may share task names, so name@hash."""
    return task.name + "@" + task.content_hash[:8]


async def rollout_tasks(
    entries: list[TaskEntry],
    rollout: Rollout,
    model: ModelSpec,
    run_dir: Path,
    *,
    dataset_id: str,
    on_start=None,
    on_done=None,
    say=None,
    store_dir: Path | None = None,
) -> StageReport:
    report = StageReport(stage="rollout", kind="rollout", count_in=len(entries))
    copies = Counter(e.content_hash for e in entries)
    tasks, seen = [], set()
    for e in entries:
        if e.content_hash in seen:
            continue
        seen.add(e.content_hash)
        try:
            task = load_task(e.path)
        except TaskError as err:
            report.dropped.append(Drop(name=e.name, reason=f"broken task: {err.problem}"))
            continue
        if supports(rollout.agent, task):
            tasks.append(TaskRef.of(task))  # loaded again when its trial starts: memory flat in the task count
        else:  # e.g. a tool task in a terminus rollout: reported, not run
            report.dropped.append(
                Drop(
                    name=e.name,
                    reason=f"a '{task.kind}' task: the {rollout.agent} agent "
                    f"works on {', '.join(sorted(_agent(rollout).task_kinds))} tasks",
                )
            )
    served = _model_name(rollout, model)
    config = RolloutConfig(
        dataset=dataset_id,
        agent=rollout.agent,
        agent_version=_agent(rollout).version,
        model=served,
        sampling=sampling(model, rollout),
        max_turns=rollout.max_turns,
        attempts=rollout.attempts,
        network=rollout.network,
        base_url=model.base_url,
        api_key_env=model.api_key_env,
        concurrency=rollout.concurrency,
        model_concurrency=model.concurrency,
    )
    store = TrialStore(store_dir or default_store_dir(run_dir))
    preflight(run_dir, config, tasks, task_key=sourced_name)  # refuse before starting a model server
    # retry_infra: trials an outage ended are never a result here; the same `run` runs them again
    kwargs = dict(
        copies=dict(copies),
        on_start=on_start,
        on_done=on_done,
        store=store,
        executor=_executor(rollout, say),
        retry_infra=True,
        task_key=sourced_name,
    )
    try:
        if served is not None:
            async with open_model(
                model.name,
                base_url=model.base_url,
                api_key_env=model.api_key_env,
                sampling=config.sampling,
                concurrency=model.concurrency,
                say=say,
            ) as client:
                result = await run_rollout(config, tasks, run_dir, client=client, **kwargs)
        else:
            result = await run_rollout(config, tasks, run_dir, **kwargs)
    except asyncio.CancelledError:  # Ctrl-C: say what this stage's run folder holds, then stop
        if say:
            say(f"rollout interrupted: {interrupted_counts(run_dir)}")
        raise
    stop_on_outage(run_dir, result.planned)
    report.count_out = result.planned
    note = f"{result.planned} trials ({result.ran} run now, {result.reused} reused from earlier runs, {result.skipped} already done)"
    report.notes.append(note)
    if say:
        say(f"rollout: {note}")
    return report


def stop_on_outage(run_dir: Path, planned: int) -> None:
    """Trials that ended because the endpoint failed make the stage unfinished (never cached): its
    traces would be missing, and the filters after it would blame the data for the outage."""
    from agentmill.models.outages import outage_lines
    from agentmill.rollout.infra import infra_rows

    failed = [r for r in infra_rows(run_dir)[0] if r["outcome"] == Outcome.INFRA_ERROR.value]
    if failed:
        raise InfraStopError(
            f"rollout: {len(failed)} of {planned} trials ended in endpoint failures ("
            + "; ".join(outage_lines(r["exception"] for r in failed))
            + "). The stage is not cached: "
            "run the same command again once the endpoint works, and only those trials run again"
        )


@register_stage
class RolloutStage(Stage):
    name = kind = "rollout"
    consumes, produces = "tasks", "traces"

    def __init__(self, recipe: Recipe):
        self.recipe, self.step = recipe, "rollout"
        self.model = recipe.rollout.model or recipe.model

    def settings(self):
        return rollout_identity(self.recipe.rollout, self.model)

    def describe(self) -> str:
        return f"rollout: {self.recipe.rollout.agent}"

    async def run(self, records, ctx: StageContext):
        tasks = [t async for t in records]
        hooks = ctx.progress(len(tasks) * self.recipe.rollout.attempts) if ctx.progress else None
        try:
            report = await rollout_tasks(
                tasks,
                self.recipe.rollout,
                self.model,
                ctx.out / "run",
                dataset_id=f"recipe:{ctx.out.name}",
                on_start=hooks.started if hooks else None,
                on_done=hooks.finished if hooks else None,
                say=ctx.say,
            )
        finally:
            if hooks:
                hooks.close()
        ctx.report.dropped += report.dropped
        ctx.report.notes += report.notes
        skipped: list[str] = []
        for rec in iter_traces(ctx.out / "run", errors=skipped):
            yield rec
        ctx.report.notes += [f"unreadable trial: {s}" for s in skipped]

    def publish(self, out: Path, run_dir: Path) -> None:
        link = run_dir / "rollout"
        if link.is_symlink() or link.is_file():
            link.unlink()
        link.symlink_to(os.path.relpath(out / "run", run_dir))
