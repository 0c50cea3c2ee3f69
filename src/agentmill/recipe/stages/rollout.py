"""Stage: teacher rollouts over the mixed task set, in a resumable run folder inside the stage."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agentmill.agents import MODEL_AGENTS, agent_class
from agentmill.models.client import SamplingParams
from agentmill.models.session import open_model, served_name
from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.schema import ModelSpec, Rollout
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.runner import run_rollout
from agentmill.tasks import load_task
from agentmill.errors import TaskError


def sampling(model: ModelSpec, rollout: Rollout) -> SamplingParams:
    temperature = rollout.temperature if rollout.temperature is not None else model.temperature
    return SamplingParams(temperature=temperature, top_p=model.top_p, max_tokens=model.max_tokens)


def rollout_identity(rollout: Rollout, model: ModelSpec) -> dict:
    uses_model = rollout.agent in MODEL_AGENTS
    return {"agent": rollout.agent, "agent_version": agent_class(rollout.agent).version, "attempts": rollout.attempts,
            "max_turns": rollout.max_turns, "model": served_name(model.name) if uses_model else None,
            "sampling": sampling(model, rollout).model_dump() if uses_model else None}


async def rollout_tasks(entries: list[TaskEntry], rollout: Rollout, model: ModelSpec, run_dir: Path, *, dataset_id: str,
                        on_start=None, on_done=None, say=None) -> StageReport:
    report = StageReport(stage="rollout", kind="rollout", count_in=len(entries))
    copies = Counter(e.content_hash for e in entries)
    tasks, seen = [], set()
    for e in entries:
        if e.content_hash in seen:
            continue
        seen.add(e.content_hash)
        try:
            tasks.append(load_task(e.path))
        except TaskError as err:
            report.dropped.append(Drop(name=e.name, reason=f"broken task: {err.problem}"))
    uses_model = rollout.agent in MODEL_AGENTS
    config = RolloutConfig(
        dataset=dataset_id, task_hashes={t.name + "@" + t.content_hash[:8]: t.content_hash for t in tasks},
        agent=rollout.agent, agent_version=agent_class(rollout.agent).version,
        model=served_name(model.name) if uses_model else None, sampling=sampling(model, rollout),
        max_turns=rollout.max_turns, attempts=rollout.attempts, base_url=model.base_url,
        api_key_env=model.api_key_env, concurrency=rollout.concurrency, model_concurrency=model.concurrency,
    )
    if uses_model:
        async with open_model(model.name, base_url=model.base_url, api_key_env=model.api_key_env, sampling=config.sampling,
                              concurrency=model.concurrency, say=say) as client:
            result = await run_rollout(config, tasks, run_dir, client=client, copies=dict(copies), on_start=on_start, on_done=on_done)
    else:
        result = await run_rollout(config, tasks, run_dir, copies=dict(copies), on_start=on_start, on_done=on_done)
    report.count_out = result.planned
    report.notes.append(f"{result.planned} trials ({result.ran} run now, {result.skipped} already done)")
    return report
