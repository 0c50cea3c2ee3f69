"""Run many trials: plan them, skip the finished, run the rest concurrently, record each once.

Layout of a run folder:
    config.json          the RolloutConfig (identity fields are checked on resume)
    ledger.sqlite        one row per trial (WAL)
    trials/<trial_id>/   trial.json, trajectory.json (ATIF), result.json, verifier/{stdout,stderr}.txt
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentmill import __version__
from agentmill.agents import make_agent
from agentmill.agents.base import AgentResult
from agentmill.errors import AgentmillError
from agentmill.images import ImageBuilder
from agentmill.models.client import ModelClient
from agentmill.paths import sweep_scratch
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.identity import trial_id
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.result import TrialResult
from agentmill.rollout.trial import run_trial
from agentmill.tasks.hashing import hash_file, hash_text, hash_tree
from agentmill.tasks.model import Task
from agentmill.traces.atif import AgentInfo, Step, Trajectory
from agentmill.traces.telemetry import compute_telemetry
from agentmill.traces.text import clean_text
from agentmill.verify.outcome import Outcome


@dataclass
class TrialPlan:
    trial_id: str
    task: Task
    attempt: int


@dataclass
class RolloutReport:
    planned: int
    skipped: int
    recovered: int
    ran: int
    results: list[TrialResult]


def unique_tasks(tasks: list[Task]) -> tuple[list[Task], list[Task]]:
    """(tasks, byte-identical duplicates of an earlier task). Duplicates share their trials' identity."""
    seen: set[str] = set()
    unique, dupes = [], []
    for t in tasks:
        (dupes if t.content_hash in seen else unique).append(t)
        seen.add(t.content_hash)
    return unique, dupes


def plan_trials(config: RolloutConfig, tasks: list[Task], copies: dict[str, int] | None = None) -> list[TrialPlan]:
    """Attempts per task = config.attempts x the task's copies (upsampled tasks get more attempts)."""
    unique, _ = unique_tasks(tasks)
    copies = copies or {}
    return [TrialPlan(trial_id(config, t.content_hash, a), t, a)
            for t in unique for a in range(config.attempts * copies.get(t.content_hash, 1))]


def open_run(run_dir: Path, config: RolloutConfig) -> Ledger:
    """Create or resume a run folder. A resume whose identity changed is refused, naming the change."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "config.json"
    if path.exists():
        try:
            old = RolloutConfig.model_validate_json(path.read_text())
        except ValueError as e:
            raise AgentmillError(f"{path}: unreadable run config ({str(e).splitlines()[0]})") from None
        changes = config.identity_changes(old)
        if changes:
            raise AgentmillError(f"{run_dir} was made with other settings; refusing to resume: " + "; ".join(changes)
                                 + ". Use a new --out folder, or the original settings.")
    _atomic_write(path, config.model_dump_json(indent=2))
    (run_dir / "trials").mkdir(exist_ok=True)
    for stale in (run_dir / "trials").glob(".tmp-*"):  # half-written folders of a killed run
        shutil.rmtree(stale, ignore_errors=True)
    return Ledger(run_dir / "ledger.sqlite")


async def run_rollout(
    config: RolloutConfig,
    tasks: list[Task],
    run_dir: Path,
    *,
    client: ModelClient | None = None,
    retry_infra: bool = False,
    builder: ImageBuilder | None = None,
    on_start: Callable[[TrialPlan], None] | None = None,
    on_done: Callable[[TrialResult], None] | None = None,
    copies: dict[str, int] | None = None,
) -> RolloutReport:
    ledger = open_run(run_dir, config)
    await asyncio.to_thread(sweep_scratch)  # sandboxes of a killed earlier run
    trials_dir = run_dir / "trials"
    try:
        recovered, _ = ledger.recover(trials_dir)
        plans = plan_trials(config, tasks, copies)
        if retry_infra:
            infra = [r["trial_id"] for r in ledger.rows()
                     if r["state"] == "done" and r["outcome"] in {o.value for o in Outcome if o.is_infra}]
            for tid in infra:
                shutil.rmtree(trials_dir / tid, ignore_errors=True)
            ledger.forget(infra)
        done = ledger.done_ids()
        todo = [p for p in plans if p.trial_id not in done]
        builder = builder or ImageBuilder()
        gate = asyncio.Semaphore(config.concurrency)

        async def one(plan: TrialPlan) -> TrialResult:
            async with gate:
                if on_start:
                    on_start(plan)
                ledger.start(plan.trial_id, plan.task.name, plan.task.content_hash, plan.attempt)
                agent = make_agent(config.agent, client=client, max_turns=config.max_turns)
                agent_result = AgentResult()
                result = await run_trial(plan.task, agent, builder, agent_result=agent_result)
                trajectory = _trajectory(plan, config, agent, agent_result)
                result.trial_id, result.attempt, result.model = plan.trial_id, plan.attempt, config.model
                fm = trajectory.final_metrics
                result.tokens = {"prompt": fm.total_prompt_tokens or 0, "completion": fm.total_completion_tokens or 0}
                result.cost_usd = fm.total_cost_usd
                result.agent_metadata = agent_result.metadata
                result.exception = clean_text(result.exception) or None
                await asyncio.to_thread(_write_trial, trials_dir, plan, config, result, trajectory)
                ledger.finish(plan.trial_id, json.loads(result.model_dump_json()))
                if on_done:
                    on_done(result)
                return result

        results = await asyncio.gather(*(one(p) for p in todo))
        return RolloutReport(planned=len(plans), skipped=len(plans) - len(todo), recovered=recovered,
                             ran=len(todo), results=list(results))
    finally:
        ledger.close()


def _trajectory(plan: TrialPlan, config: RolloutConfig, agent, agent_result: AgentResult) -> Trajectory:
    steps = list(agent_result.steps)
    if not any(s.source == "user" for s in steps):  # scripted agents: the task is still the prompt
        steps.insert(0, Step(step_id=0, source="user", message=plan.task.instruction))
    for i, step in enumerate(steps, 1):
        step.step_id = i
    return Trajectory(
        session_id=plan.trial_id,
        agent=AgentInfo(name=agent.name, version=agent.version, model_name=agent.model_name,
                        extra={"agentmill_version": __version__, "max_turns": config.max_turns if config.model else None,
                               "sampling": config.sampling.model_dump() if config.model else None}),
        steps=steps,
        extra={"task": plan.task.name, "task_hash": plan.task.content_hash, "attempt": plan.attempt},
    ).summarize()


def _write_trial(trials_dir: Path, plan: TrialPlan, config: RolloutConfig, result: TrialResult, trajectory: Trajectory) -> None:
    """Write the folder under a temporary name, then rename: a trial folder is whole or absent."""
    final = trials_dir / plan.trial_id
    tmp = trials_dir / f".tmp-{plan.trial_id}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "verifier").mkdir(parents=True)
    identity = {"trial_id": plan.trial_id, "task": plan.task.name, "task_hash": plan.task.content_hash,
                "task_path": str(plan.task.path), "task_source": config.dataset,
                "task_metadata": plan.task.config.metadata, "verifier_hash": verifier_hash(plan.task),
                "instruction": plan.task.instruction, "attempt": plan.attempt, "agent": config.agent,
                "agent_version": config.agent_version, "model": config.model,
                "sampling": config.sampling.model_dump() if config.model else None}
    (tmp / "trial.json").write_text(json.dumps(identity, indent=2))
    (tmp / "trajectory.json").write_text(trajectory.model_dump_json(indent=2, exclude_none=True))
    (tmp / "verifier" / "stdout.txt").write_text(result.verifier_stdout, errors="replace")
    (tmp / "verifier" / "stderr.txt").write_text(result.verifier_stderr, errors="replace")
    (tmp / "result.json").write_text(result.model_dump_json(indent=2))
    telemetry = compute_telemetry(trajectory, json.loads(result.model_dump_json()))
    (tmp / "telemetry.json").write_text(telemetry.model_dump_json(indent=2))
    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def verifier_hash(task: Task) -> str:
    """Which tests judged the trial: a hash over the verifier's files."""
    return hash_text(*(hash_tree(p) if p.is_dir() else hash_file(p) for p in task.tests_sources))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)
