"""`agentmill export --format harbor-job`: the kept trials as a Harbor job folder (layout: harbor_schema.py).

Each trial becomes `<task>__<7 characters of its trial id>/` with Harbor's config.json, result.json,
agent/trajectory.json and verifier/ files; the job gets config.json and result.json with Harbor's
stats (per agent, model and dataset: trials, errors, mean reward, which trials got which reward,
which raised which exception). What Harbor's records have no field for (agentmill's outcome, trial
id, attempt, task hash, tamper evidence) rides in `agent_result.metadata["agentmill"]`, so
`agentmill import harbor` restores the run exactly. Streaming: one trial in memory at a time; the
folder is written under a temporary name and renamed into place.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.traces.atif import Trajectory
from agentmill.traces.harbor_atif import trajectory_to_harbor
from agentmill.traces.harbor_schema import EXCEPTION_OF, STDERR, STDOUT, TRAJECTORY, eval_key, scalar_reward
from agentmill.traces.records import TraceRecord
from agentmill.traces.redact import redact

METADATA_KEY = "agentmill"


def trial_name(task: str, trial_id: str) -> str:
    """Harbor's `<task name, 32 characters>__<7 characters>` (an `org/name` task: its name); the suffix comes
    from the trial id, so it is stable. Only a plain file name comes out, whatever an imported task was called."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", task.split("/")[-1]).lstrip(".") or "task"
    suffix = re.sub(r"[^A-Za-z0-9]", "", trial_id)[:7] or "0000000"
    return f"{name[:32].rstrip('_-')}__{suffix}"


def write_harbor_job(records: Iterable[TraceRecord], out: Path, *, allow_empty: bool = False) -> tuple[int, int]:
    """Write `records` as the Harbor job folder `out`: (trials written, secrets redacted)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise AgentmillError(f"{out}: already exists; a Harbor job folder is written whole: remove it or choose another --out")
    tmp = out.parent / f".tmp-{out.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    job = _Job(out, uuid.uuid4())
    try:
        for rec in records:
            job.add(tmp, rec)
        if job.trials == 0 and not allow_empty:
            shutil.rmtree(tmp)
            return 0, 0
        job.finish(tmp)
        if out.exists():
            out.rmdir()  # empty (checked above)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return job.trials, job.redactions


class _Job:
    """Job-level tallies, grown one trial at a time."""

    def __init__(self, out: Path, job_id: uuid.UUID):
        self.out, self.id = out, job_id
        self.trials = self.redactions = self.max_attempt = 0
        self.evals: dict[str, dict] = {}
        self.agents: dict[tuple, dict] = {}
        self.datasets: dict[str, dict] = {}
        self.started: list[str] = []
        self.finished: list[str] = []

    def add(self, root: Path, rec: TraceRecord) -> None:
        t, r = rec.trial, rec.result
        name = trial_name(t["task"], rec.trial_id)
        folder = root / name
        (folder / "agent").mkdir(parents=True)
        (folder / "verifier").mkdir()
        trajectory, n = _redacted(rec.trajectory)
        self.redactions += n
        (folder / TRAJECTORY).write_text(json.dumps(trajectory_to_harbor(trajectory), indent=2, ensure_ascii=False))
        for path, text in ((STDOUT, r.get("verifier_stdout") or ""), (STDERR, r.get("verifier_stderr") or "")):
            clean, n = redact(text)
            self.redactions += n
            (folder / path).write_text(clean)
        rewards = r.get("rewards") or ({"reward": r["reward"]} if r.get("reward") is not None else {})
        if set(rewards) == {"reward"}:
            (folder / "verifier" / "reward.txt").write_text(f"{rewards['reward']}\n")
        elif rewards:
            (folder / "verifier" / "reward.json").write_text(json.dumps(rewards))
        exception = _exception(r["outcome"], r, trajectory)
        if exception:
            (folder / "exception.txt").write_text(f"{exception['exception_type']}: {exception['exception_message']}\n")
        dataset = Path(t.get("task_source") or "adhoc").name or "adhoc"
        agent = {"name": t.get("agent"), "import_path": None, "model_name": t.get("model"), "kwargs": {}, "env": {}}
        config = _trial_config(t, name, self.out, agent, dataset, self.id)
        times = _times(trajectory, r.get("timings") or {})
        result = {
            "id": str(uuid.uuid5(self.id, rec.trial_id)), "task_name": t["task"], "trial_name": name,
            "trial_uri": (self.out / name).resolve().as_uri(), "task_id": {"path": t.get("task_path") or t["task"]},
            "source": dataset, "task_checksum": t.get("task_hash"), "config": config,
            "agent_info": {"name": t.get("agent"), "version": t.get("agent_version") or "unknown",
                           "model_info": {"name": t["model"], "provider": "openai-compatible"} if t.get("model") else None},
            "agent_result": _agent_context(rec),
            "verifier_result": {"rewards": rewards} if rewards else None,
            "exception_info": exception, **times,
        }
        (folder / "config.json").write_text(json.dumps(config, indent=2))
        (folder / "result.json").write_text(json.dumps(result, indent=2, ensure_ascii=False))
        self._tally(eval_key(t.get("agent") or "agent", t.get("model"), dataset), name, rewards, exception)
        self.agents[(t.get("agent"), t.get("model"))] = agent
        self.datasets[dataset] = {"path": t.get("task_source"), "name": dataset}
        self.max_attempt = max(self.max_attempt, int(t.get("attempt") or 0))
        self.started += [times["started_at"]] if times["started_at"] else []
        self.finished += [times["finished_at"]] if times["finished_at"] else []
        self.trials += 1

    def _tally(self, key: str, name: str, rewards: dict, exception: dict | None) -> None:
        e = self.evals.setdefault(key, {"n_trials": 0, "n_errors": 0, "rewards": [], "reward_stats": {}, "exception_stats": {}})
        if exception:
            e["n_errors"] += 1
            e["exception_stats"].setdefault(exception["exception_type"], []).append(name)
        else:
            e["n_trials"] += 1
        e["rewards"].append(scalar_reward(rewards))
        for k, v in rewards.items():
            e["reward_stats"].setdefault(k, {}).setdefault(str(v), []).append(name)

    def finish(self, root: Path) -> None:
        evals = {}
        for key, e in self.evals.items():
            values = [v if v is not None else 0.0 for v in e.pop("rewards")]  # Harbor's mean counts a missing reward as 0
            evals[key] = {**e, "metrics": [{"mean": sum(values) / len(values)}] if values else []}
        result = {"id": str(self.id), "started_at": min(self.started, default=None), "finished_at": max(self.finished, default=None),
                  "n_total_trials": self.trials,
                  "stats": {"n_trials": sum(e["n_trials"] for e in evals.values()),
                            "n_errors": sum(e["n_errors"] for e in evals.values()), "evals": evals}}
        config = {"job_name": self.out.name, "jobs_dir": str(self.out.parent), "n_attempts": self.max_attempt + 1,
                  "timeout_multiplier": 1.0, "debug": False, "orchestrator": {"type": "local"},
                  "environment": _ENVIRONMENT, "verifier": _VERIFIER, "metrics": [],
                  "agents": list(self.agents.values()), "datasets": list(self.datasets.values()), "tasks": []}
        (root / "config.json").write_text(json.dumps(config, indent=2))
        (root / "result.json").write_text(json.dumps(result, indent=2))


_ENVIRONMENT = {"force_build": False, "delete": True, "env": {}, "kwargs": {}}
_VERIFIER = {"override_timeout_sec": None, "max_timeout_sec": None, "env": {}, "disable": False}


def _trial_config(t: dict, name: str, out: Path, agent: dict, dataset: str, job_id: uuid.UUID) -> dict:
    return {"task": {"path": t.get("task_path") or t["task"], "git_url": None, "git_commit_id": None, "overwrite": False,
                     "download_dir": None, "source": dataset},
            "trial_name": name, "trials_dir": str(out), "timeout_multiplier": 1.0, "agent": agent,
            "environment": _ENVIRONMENT, "verifier": _VERIFIER, "artifacts": [], "job_id": str(job_id)}


def _agent_context(rec: TraceRecord) -> dict:
    t, r = rec.trial, rec.result
    tokens = r.get("tokens") or {}
    cached = (rec.trajectory.final_metrics.total_cached_tokens if rec.trajectory.final_metrics else None)
    keep = ("trial_id", "attempt", "task_hash", "task_path", "task_source", "task_metadata", "verifier_hash", "instruction",
            "agent_version", "sampling")
    return {"n_input_tokens": tokens.get("prompt"), "n_cache_tokens": cached, "n_output_tokens": tokens.get("completion"),
            "cost_usd": r.get("cost_usd"), "rollout_details": None,
            "metadata": {METADATA_KEY: {**{k: t.get(k) for k in keep}, "outcome": r["outcome"], "exception": r.get("exception"),
                                        "notes": r.get("notes") or [], "tamper": r.get("tamper") or [],
                                        "timings": r.get("timings") or {}, "agent_metadata": r.get("agent_metadata") or {}}}}


def _exception(outcome: str, r: dict, trajectory: Trajectory) -> dict | None:
    kind = EXCEPTION_OF.get(outcome)
    if kind is None:
        return None
    when = trajectory.steps[-1].timestamp if trajectory.steps else None
    return {"exception_type": kind, "exception_message": r.get("exception") or outcome,
            "exception_traceback": "", "occurred_at": when}


def _times(trajectory: Trajectory, timings: dict) -> dict:
    """Harbor records when each phase started and finished; agentmill records how long each took.
    The phases are laid end to end from the first step's timestamp (none without a trajectory)."""
    first = trajectory.steps[0].timestamp if trajectory.steps else None
    try:
        start = datetime.fromisoformat(first.replace("Z", "+00:00")) if first else None
    except ValueError:
        start = None
    keys = {"started_at": None, "finished_at": None, "environment_setup": None, "agent_setup": None,
            "agent_execution": None, "verifier": None}
    if start is None:
        return keys
    iso = lambda d: d.isoformat()  # noqa: E731
    t = start
    for phase, seconds in (("environment_setup", timings.get("environment", 0.0)), ("agent_setup", timings.get("sandbox_start", 0.0)),
                           ("agent_execution", timings.get("agent", 0.0)), ("verifier", timings.get("verifier", 0.0))):
        end = t + timedelta(seconds=seconds or 0.0)
        keys[phase] = {"started_at": iso(t), "finished_at": iso(end)}
        t = end
    keys["started_at"] = iso(start)
    keys["finished_at"] = iso(start + timedelta(seconds=max(timings.get("total") or 0.0, (t - start).total_seconds())))
    return keys


def _redacted(trajectory: Trajectory) -> tuple[Trajectory, int]:
    """Secrets out of every text a trajectory carries (stored ones are clean already; other harnesses' may not be)."""
    traj = trajectory.model_copy(deep=True)
    count = 0

    def clean(text: str | None) -> str | None:
        nonlocal count
        if not text:
            return text
        out, n = redact(text)
        count += n
        return out

    for step in traj.steps:
        step.message = clean(step.message) or ""
        step.reasoning_content = clean(step.reasoning_content)
        for call in step.tool_calls or []:
            call.arguments = {k: clean(v) if isinstance(v, str) else v for k, v in call.arguments.items()}
        for res in (step.observation.results if step.observation else []):
            res.content = clean(res.content)
    return traj, count
