"""`agentmill export --format harbor-job`: the kept trials as a Harbor job folder (layout: schema.py).

Each trial becomes `<task>__<7 characters of its trial id>/` with Harbor's config.json, lock.json,
result.json, agent/trajectory.json and verifier/ files; the job gets config.json, lock.json and
result.json with Harbor's counters and stats (stats.py; configs and locks: config.py).
What Harbor's records have no field for (agentmill's outcome, trial id, attempt, task hash, tamper
evidence) rides in `agent_result.metadata["agentmill"]`, so `agentmill import harbor` restores the run
exactly. Streaming: one trial in memory at a time (the job's lock gathers the trials' locks in a side
file); the folder is written under a temporary name and renamed into place.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

from agentmill.errors import AgentmillError
from agentmill.interop.harbor.atif import trajectory_to_harbor
from agentmill.interop.harbor.config import (
    VERIFIER_ENVIRONMENT_MODE,
    agent_config,
    dataset_config,
    environment_config,
    job_config,
    job_lock_head,
    task_config,
    task_digest,
    trial_config,
    trial_lock,
)
from agentmill.interop.harbor.schema import STDERR, STDOUT, TRAJECTORY, error_policy, eval_key, harbor_exception
from agentmill.interop.harbor.stats import JobTally
from agentmill.traces.atif import Trajectory
from agentmill.traces.records import TraceRecord
from agentmill.traces.redact import redact
from agentmill.traces.text import encodable

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
        raise AgentmillError(
            f"{out}: already exists; a Harbor job folder is written whole: remove it or choose another --out"
        )
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
        job.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return job.trials, job.redactions


class _Job:
    """Job-level tallies, grown one trial at a time (the trials' locks go to a side file, not to memory)."""

    def __init__(self, out: Path, job_id: uuid.UUID):
        self.out, self.id = out, job_id
        self.trials = self.redactions = self.max_attempt = 0
        self.tally = JobTally()
        self.agents: dict[tuple, dict] = {}
        self.datasets: dict[str, dict] = {}
        self.tasks: dict[str, dict] = {}
        self.started: str | None = None  # the earliest trial start and the latest finish (ISO, one zone: they sort)
        self.finished: str | None = None
        self.now = _iso(datetime.now(UTC))
        self.locks: TextIO | None = None  # the side file of the trials' locks (_job_lock_entry)
        self.names: set[str] = set()
        self.folders: dict[str, str] = {}  # trial id -> its folder's name (where its subagents' trajectories go)
        self.environments: dict[str, dict] = {}  # the trials' environment configs: the job's, when they agree

    def add(self, root: Path, rec: TraceRecord) -> None:
        if rec.telemetry.is_subagent:
            self._add_subagent(root, rec)
            return
        t, r = rec.trial, rec.result
        raw_import = t.get("imported_from")
        imported = raw_import if isinstance(raw_import, dict) else {}
        name = self._name(t["task"], rec.trial_id, imported.get("trial_name"))
        self.folders[rec.trial_id] = name
        folder = root / name
        (folder / "agent").mkdir(parents=True)
        (folder / "verifier").mkdir()
        trajectory, n = _redacted(rec.trajectory)
        self.redactions += n
        if (
            trajectory.steps
        ):  # ATIF needs a step: a trial without one has no trajectory file, as Harbor's agents that write none
            (folder / TRAJECTORY).write_text(_json_text(trajectory_to_harbor(trajectory)))
        for path, text in ((STDOUT, r.get("verifier_stdout") or ""), (STDERR, r.get("verifier_stderr") or "")):
            clean, n = redact(text)
            self.redactions += n
            (folder / path).write_text(clean)
        rewards = r.get("rewards") or ({"reward": r["reward"]} if r.get("reward") is not None else {})
        if set(rewards) == {"reward"}:
            (folder / "verifier" / "reward.txt").write_text(f"{rewards['reward']}\n")
        elif rewards:
            (folder / "verifier" / "reward.json").write_text(json.dumps(rewards))
        times = _times(trajectory, r.get("timings") or {})
        exception = _exception(r, trajectory, times["finished_at"] or self.now)
        if exception:
            (folder / "exception.txt").write_text(f"{exception['exception_type']}: {exception['exception_message']}\n")
        task_source = t.get("task_source")
        dataset = Path(task_source or "adhoc").name or "adhoc"
        task_path = t.get("task_path") or t["task"]
        agent = agent_config(t.get("agent"), t.get("model"))
        config = trial_config(
            task=task_config(task_path, dataset),
            trial_name=name,
            trials_dir=str(self.out),
            agent=agent,
            job_id=str(self.id),
            environment=environment_config(imported.get("environment")),
        )
        model_info = _model_info(t.get("model"))
        reward_valid = bool(rewards) and (exception is None or exception["policy"]["has_valid_reward"])
        agent_result = _agent_context(rec, trajectory)
        result = {
            "schema_version": 1,
            "id": str(uuid.uuid5(self.id, rec.trial_id)),
            "task_name": t["task"],
            "trial_name": name,
            "trial_uri": (self.out / name).resolve().as_uri(),
            "task_id": {"path": task_path},
            "source": dataset,
            "task_checksum": t.get("task_hash") or "",
            "config": config,
            "agent_info": {
                "name": t.get("agent"),
                "version": t.get("agent_version") or "unknown",
                "model_info": model_info,
            },
            "agent_result": agent_result,
            "verifier_result": {"rewards": rewards} if rewards else None,
            "verifier_environment_mode": imported.get("verifier_environment_mode") or VERIFIER_ENVIRONMENT_MODE,
            "exception_info": exception,
            **times,
            "step_results": None,
            "reward_valid": reward_valid,
        }
        self.environments[json.dumps(config["environment"], sort_keys=True)] = config["environment"]
        (folder / "config.json").write_text(json.dumps(config, indent=2))
        (folder / "result.json").write_text(_json_text(result))
        lock = trial_lock(
            config,
            task_name=Path(task_path).name or t["task"],
            digest=task_digest(t.get("task_hash"), t["task"]),
            verifier_mode=result["verifier_environment_mode"],
        )
        (folder / "lock.json").write_text(json.dumps(lock, indent=2))
        self._job_lock_entry(root, lock)
        key = eval_key(t.get("agent") or "agent", model_info["name"] if model_info else None, dataset)
        tokens = {k: agent_result[k] for k in ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd")}
        self.tally.add(
            key,
            trial_name=name,
            task=t["task"],
            rewards=rewards,
            reward_valid=reward_valid,
            exception_type=exception["exception_type"] if exception else None,
            tokens=tokens,
        )
        self.agents[(t.get("agent"), t.get("model"))] = agent
        if task_source:
            self.datasets[task_source] = dataset_config(task_source)
        else:  # a task of no dataset folder: listed on its own, as Harbor's `tasks`
            self.tasks[task_path] = task_config(task_path, dataset)
        self.max_attempt = max(self.max_attempt, int(t.get("attempt") or 0))
        if times["started_at"]:
            self.started = min(self.started or times["started_at"], times["started_at"])
            self.finished = max(self.finished or times["finished_at"], times["finished_at"])
        self.trials += 1

    def _add_subagent(self, root: Path, rec: TraceRecord) -> None:
        """A subagent (a context handoff's summary request, traces/handoff.py) is no trial of its own: as
        Harbor does, its trajectory goes beside its trial's, `agent/trajectory.<what>.json`; left out when
        its trial is not in the job."""
        parent = self.folders.get(str(rec.trial.get("parent_trial_id")))
        if parent is None:
            return
        trajectory, n = _redacted(rec.trajectory)
        self.redactions += n
        what = re.sub(r"[^A-Za-z0-9_-]", "-", rec.trial_id.rsplit(".", 1)[-1])
        (root / parent / TRAJECTORY).with_name(f"trajectory.{what}.json").write_text(
            _json_text(trajectory_to_harbor(trajectory))
        )

    def _name(self, task: str, trial_id: str, harbor_name) -> str:
        """The trial folder's name: the one Harbor gave a trial imported from it (when a plain name), else
        `<task>__<7 characters of the trial id>` (more characters if two trials would share a folder)."""
        if (
            isinstance(harbor_name, str)
            and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", harbor_name)
            and harbor_name not in self.names
        ):
            name = harbor_name
        else:
            name = trial_name(task, trial_id)
            if name in self.names:
                name = f"{name}{re.sub(r'[^A-Za-z0-9]', '', trial_id)[7:24]}"
        if name in self.names:
            raise AgentmillError(f"two trials would share the Harbor trial folder {name}: trial {trial_id}")
        self.names.add(name)
        return name

    def _job_lock_entry(self, root: Path, lock: dict) -> None:
        """The job's lock.json lists every trial's lock: kept in a side file until the job is finished."""
        if self.locks is None:
            self.locks = open(root / _LOCKS_SIDE_FILE, "w")
        self.locks.write(json.dumps(lock) + "\n")

    def finish(self, root: Path) -> None:
        started = self.started or self.now
        finished = self.finished or started
        result = {
            "schema_version": 1,
            "id": str(self.id),
            "started_at": started,
            "updated_at": finished,
            "finished_at": finished,
            "n_total_trials": self.trials,
            "stats": self.tally.stats(),
        }
        config = job_config(
            job_name=self.out.name,
            jobs_dir=str(self.out.parent),
            n_attempts=self.max_attempt + 1,
            agents=list(self.agents.values()),
            datasets=list(self.datasets.values()),
            tasks=list(self.tasks.values()),
            environment=next(iter(self.environments.values())) if len(self.environments) == 1 else None,
        )
        (root / "config.json").write_text(json.dumps(config, indent=2))
        (root / "result.json").write_text(json.dumps(result, indent=2))
        self._write_job_lock(root)

    def _write_job_lock(self, root: Path) -> None:
        side = root / _LOCKS_SIDE_FILE
        self.close()
        head = json.dumps(job_lock_head(self.now), indent=2)
        with open(root / "lock.json", "w") as out:
            out.write(head[:-2] + ',\n  "trials": [')  # the head's closing brace gives way to the trials
            if side.exists():
                with open(side) as lines:
                    for i, line in enumerate(lines):
                        out.write(("," if i else "") + "\n    " + line.rstrip("\n"))
            out.write("\n  ]\n}\n")
        side.unlink(missing_ok=True)

    def close(self) -> None:
        if self.locks is not None:
            self.locks.close()
            self.locks = None


_LOCKS_SIDE_FILE = ".trial-locks.jsonl"


def _json_text(record: dict) -> str:
    """A record as Harbor's files hold it (UTF-8, not escaped); a lone surrogate from an imported
    trajectory becomes U+FFFD instead of failing the export when the file is encoded."""
    return encodable(json.dumps(record, indent=2, ensure_ascii=False))


def _model_info(model: str | None) -> dict | None:
    """Harbor's model_info: the name without its provider prefix (`openai/gpt-x`: provider openai, name gpt-x)."""
    if not model:
        return None
    provider, name = model.split("/", 1) if "/" in model else (None, model)
    return {"name": name, "provider": provider}


def _agent_context(rec: TraceRecord, trajectory: Trajectory) -> dict:
    t, r = rec.trial, rec.result
    tokens = r.get("tokens") or {}
    cached = rec.trajectory.final_metrics.total_cached_tokens if rec.trajectory.final_metrics else None
    keep = (
        "trial_id",
        "attempt",
        "task_hash",
        "task_path",
        "task_source",
        "task_metadata",
        "verifier_hash",
        "instruction",
        "agent_version",
        "sampling",
        "internet",
        "network",
    )
    usage = {
        "n_input_tokens": tokens.get("prompt", 0),
        "n_cache_tokens": cached,
        "n_output_tokens": tokens.get("completion", 0),
        "cost_usd": r.get("cost_usd"),
    }
    by_model = (
        {t["model"]: {**{k: v or 0 for k, v in usage.items() if k != "cost_usd"}, "cost_usd": usage["cost_usd"]}}
        if t.get("model")
        else None
    )
    return {
        **usage,
        "model_usage": by_model,
        "rollout_details": None,
        "metadata": {
            METADATA_KEY: {
                **{k: t.get(k) for k in keep},
                "outcome": r["outcome"],
                "exception": r.get("exception"),
                "notes": r.get("notes") or [],
                "tamper": r.get("tamper") or [],
                "timings": r.get("timings") or {},
                "agent_metadata": r.get("agent_metadata") or {},
                # a trajectory of no step is written nowhere else (see add)
                **({} if trajectory.steps else {"trajectory": trajectory.model_dump(mode="json", exclude_none=True)}),
            }
        },
    }


def _exception(r: dict, trajectory: Trajectory, fallback_time: str) -> dict | None:
    """Harbor's exception_info for the trial's outcome; it happened at the last step (else when the trial ended)."""
    found = harbor_exception(r["outcome"], r.get("exception"), r.get("reward"))
    if found is None:
        return None
    kind, message = found
    when = _parsed(trajectory.steps[-1].timestamp) if trajectory.steps else None
    return {
        "exception_type": kind,
        "exception_message": message,
        "exception_traceback": "",
        "occurred_at": _iso(when) if when else fallback_time,
        "policy": error_policy(kind),
    }


def _parsed(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _iso(moment: datetime) -> str:
    """A time as pydantic writes a datetime (Harbor's records): ISO 8601, UTC as "Z"."""
    return moment.isoformat().replace("+00:00", "Z")


def _times(trajectory: Trajectory, timings: dict) -> dict:
    """Harbor records when each phase started and finished; agentmill records how long each took.
    The phases are laid end to end from the first step's timestamp (none without a trajectory)."""
    start = _parsed(trajectory.steps[0].timestamp) if trajectory.steps else None
    keys: dict[str, str | dict[str, str] | None] = {
        "started_at": None,
        "finished_at": None,
        "environment_setup": None,
        "agent_setup": None,
        "agent_execution": None,
        "verifier": None,
    }
    if start is None:
        return keys
    iso = _iso
    t = start
    for phase, seconds in (
        ("environment_setup", timings.get("environment", 0.0)),
        ("agent_setup", timings.get("sandbox_start", 0.0)),
        ("agent_execution", timings.get("agent", 0.0)),
        ("verifier", timings.get("verifier", 0.0)),
    ):
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
        for res in step.observation.results if step.observation else []:
            res.content = clean(res.content)
    return traj, count
