"""`agentmill import harbor JOB_DIR --out RUN_DIR`: a Harbor job folder -> an agentmill run folder.

Every trial folder of the job becomes `trials/<trial_id>/` (trial.json, result.json, trajectory.json,
telemetry.json, verifier/) with a done row in `ledger.sqlite`, so `status`, `export` (and its trace
filters), `report` and the viewer read it like a rollout. The outcome comes from Harbor's exception
type and reward (schema.outcome_of); a job that agentmill exported carries its own records in
`agent_result.metadata["agentmill"]` and comes back exactly. Where Harbor ran a trial (its environment
and verifier mode) is kept in trial.json's `imported_from`, and a trial's lock.json gives its task digest.
A trial folder that cannot be read is reported (folder and problem) and skipped; re-importing into the
same folder adds only new trials.

The job folder is foreign input: only regular files are read (never through a link), each up to
MAX_FILE_BYTES (foreign_files.py), and nothing in it names a path agentmill writes to.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from agentmill.errors import AgentmillError
from agentmill.interop.foreign_files import read_bytes, read_json, read_text
from agentmill.interop.harbor.atif import trajectory_from_harbor
from agentmill.interop.harbor.schema import (
    STDERR,
    STDOUT,
    TRAJECTORY,
    JobResult,
    TrialLock,
    outcome_of,
    scalar_reward,
)
from agentmill.interop.harbor.schema import TrialResult as HarborTrial
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.lock import RunLock
from agentmill.rollout.result import Timings, TrialResult
from agentmill.runtime.atomic import write_text_atomic
from agentmill.tasks.hashing import hash_text
from agentmill.traces.atif import AgentInfo, Trajectory
from agentmill.traces.render import HARBOR_TEXT_AGENTS
from agentmill.traces.telemetry import compute_telemetry
from agentmill.verify.outcome import RewardError, parse_reward

_TRIAL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
IMPORT_RECORD = "import.json"


@dataclass
class ImportReport:
    run_dir: Path
    imported: int = 0
    already: int = 0  # in the run folder from an earlier import of this job
    problems: list[str] = field(default_factory=list)  # "<trial folder>: <problem>", each one skipped
    job_stats: dict = field(default_factory=dict)  # the job's counters from its result.json (n_running_trials, ...)


@dataclass
class _Parsed:
    folder: Path
    harbor: HarborTrial  # without its `config` (a big record: the model and environment are read from it first)
    ours: dict  # agent_result.metadata["agentmill"], when an agentmill export wrote the job
    model: str | None = None
    environment: dict | None = None  # where Harbor ran it: the trial config's environment type or import path
    digest: str | None = None  # the task's digest from the trial's lock.json, when Harbor wrote one


def import_harbor_job(job_dir: Path, out: Path, *, progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Import every trial folder of `job_dir` into the run folder `out`; `progress(done, total)` after each folder."""
    job_dir, out = Path(job_dir), Path(out)
    folders = _trial_folders(job_dir)
    _claim(out, job_dir)
    with RunLock(out):  # one process writes a run folder at a time (a rollout, or another import)
        return _import(job_dir, out, folders, progress)


def _import(job_dir: Path, out: Path, folders: list[Path], progress: Callable[[int, int], None] | None) -> ImportReport:
    report = ImportReport(out)
    job = _job_result(job_dir, report.problems)
    report.job_stats = job.stats.model_dump(exclude={"evals"}) if job else {}
    job_key = job.id if job else job_dir.resolve().name  # names the job in derived trial ids
    parsed = [p for p in (_parse(f, report.problems) for f in folders) if p is not None]
    total, step = len(folders), 0
    attempts = _attempts(parsed)
    trials_dir = out / "trials"
    trials_dir.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(out / "ledger.sqlite")
    try:
        done = ledger.done_ids()
        seen: set[str] = set()
        for p in parsed:
            step += 1
            if progress:
                progress(step + total - len(parsed), total)
            try:
                trial, result, trajectory = _convert(p, attempts[id(p)], job_dir, job_key)
            except (ValueError, KeyError, TypeError, OSError, RecursionError) as e:
                report.problems.append(f"{p.folder}: {_one_line(e)}")
                continue
            tid = trial["trial_id"]
            if tid in seen:
                report.problems.append(f"{p.folder}: trial id {tid} already imported from another folder of this job")
                continue
            seen.add(tid)
            ledger.record_tasks([(trial["task"], trial["task_hash"])])  # a later rollout here refuses other content
            if tid in done:
                report.already += 1
                continue
            _write_trial(trials_dir, trial, result, trajectory)
            ledger.start(tid, trial["task"], trial["task_hash"], trial["attempt"])
            ledger.finish(tid, json.loads(result.model_dump_json()))
            _set_times(ledger, tid, p.harbor)
            report.imported += 1
        ledger.set_plan([(r["trial_id"], r["task"], r["attempt"]) for r in ledger.rows()])
    finally:
        ledger.close()
    _write_run_config(out, job_dir, parsed)
    return report


def _trial_folders(job_dir: Path) -> list[Path]:
    if not job_dir.is_dir():
        raise AgentmillError(f"{job_dir}: no such folder" if not job_dir.exists() else f"{job_dir}: not a folder")
    folders = sorted(p for p in job_dir.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))
    if not (job_dir / "config.json").is_file() and not any((p / "result.json").exists() for p in folders):
        raise AgentmillError(
            f"{job_dir}: not a Harbor job folder (no config.json, and no trial folder with a result.json)"
        )
    return folders


def _claim(out: Path, job_dir: Path) -> None:
    """A new folder, or one an earlier import of this same job made (then only new trials are added)."""
    record = out / IMPORT_RECORD
    if out.exists() and any(out.iterdir()):
        try:
            same = json.loads(record.read_text())["harbor_job"] == str(job_dir.resolve())
        except (OSError, ValueError, KeyError, TypeError):
            same = False
        if not same:
            raise AgentmillError(f"{out}: exists and is not an import of {job_dir}; choose a new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(record, json.dumps({"harbor_job": str(job_dir.resolve())}, indent=2))


def _parse(folder: Path, problems: list[str]) -> _Parsed | None:
    try:
        if not (folder / "result.json").exists():
            raise ValueError("no result.json (a trial still running, or not a trial folder)")
        data = read_json(folder / "result.json")
        harbor = HarborTrial.model_validate(data)
        meta = ((harbor.agent_result.metadata if harbor.agent_result else None) or {}).get("agentmill") or {}
        if not isinstance(meta, dict):
            raise ValueError("result.json: agent_result.metadata.agentmill is not an object")
        if "trial_id" in meta and not (isinstance(meta["trial_id"], str) and _TRIAL_ID.fullmatch(meta["trial_id"])):
            raise ValueError("result.json: agent_result.metadata.agentmill.trial_id is not a trial id")
        parsed = _Parsed(folder, harbor, meta)
        parsed.model = _model(parsed)
        parsed.environment = _environment(harbor.config)
        parsed.digest = _lock_digest(folder)
        harbor.config = None
        return parsed
    except ValidationError as e:
        err = e.errors()[0]
        problems.append(f"{folder}: result.json: {'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']}")
    except (ValueError, OSError, RecursionError) as e:
        problems.append(f"{folder}: {_one_line(e)}")
    return None


def _attempts(parsed: list[_Parsed]) -> dict[int, int]:
    """Attempt index per trial: Harbor has none, so trials of one (task, agent, model) count up by start time."""
    groups: dict[tuple, list[_Parsed]] = defaultdict(list)
    for p in parsed:
        groups[(p.harbor.task_name, p.harbor.agent_info.name, p.model)].append(p)
    out = {}
    for members in groups.values():
        members.sort(key=lambda p: (p.harbor.started_at or "", p.harbor.trial_name))
        for i, p in enumerate(members):
            out[id(p)] = int(p.ours["attempt"]) if isinstance(p.ours.get("attempt"), int) else i
    return out


def _model(p: _Parsed) -> str | None:
    agent_config = (p.harbor.config or {}).get("agent") or {}
    model = agent_config.get("model_name") if isinstance(agent_config, dict) else None
    if model is None and p.harbor.agent_info.model_info:
        model = p.harbor.agent_info.model_info.name
    return model if isinstance(model, str) else None


def _environment(config: dict | None) -> dict | None:
    env = (config or {}).get("environment")
    if not isinstance(env, dict):
        return None
    kept = {k: env[k] for k in ("type", "import_path") if isinstance(env.get(k), str)}
    return kept or None


def _lock_digest(folder: Path) -> str | None:
    """The task digest of the trial's lock.json (Harbor's successor to task_checksum); no lock: None."""
    data = read_bytes(folder / "lock.json")
    if data is None:
        return None
    try:
        lock = TrialLock.model_validate_json(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ValueError(f"lock.json: {'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']}") from None
    digest = lock.task.digest if lock.task else None
    return digest.removeprefix("sha256:") if isinstance(digest, str) and digest else None


def _convert(p: _Parsed, attempt: int, job_dir: Path, job_key: str) -> tuple[dict, TrialResult, Trajectory]:
    h, ours = p.harbor, p.ours
    trajectory = _trajectory(p)
    rewards = _rewards(p)
    reward = scalar_reward(rewards)
    recorded = h.recorded_exceptions()  # a multi-step trial records its failures on its steps
    exc = recorded[0] if recorded else None
    outcome = ours.get("outcome") or outcome_of(exc.exception_type if exc else None, reward)
    model = p.model
    task_hash = ours.get("task_hash") or h.task_checksum or p.digest or hash_text(f"harbor-task:{h.task_name}")
    trial_id = ours.get("trial_id") or hash_text(json.dumps({"harbor_job": job_key, "trial": h.trial_name}))[:24]
    named_path = ours.get("task_path") or ((h.task_id or {}).get("path") if isinstance(h.task_id, dict) else None)
    task_path = _task_folder(named_path)
    instruction = ours.get("instruction") or next((s.message for s in trajectory.steps if s.source == "user"), None)
    contexts = h.token_contexts()
    exception = (
        ours.get("exception")
        if "exception" in ours
        else (f"{exc.exception_type}: {exc.exception_message}" if exc else None)
    )
    result = TrialResult(
        trial_id=trial_id,
        attempt=attempt,
        model=model,
        task=h.task_name,
        task_hash=task_hash,
        agent=h.agent_info.name,
        agent_version=ours.get("agent_version") or h.agent_info.version,
        outcome=outcome,
        reward=reward,
        rewards={k: float(v) for k, v in rewards.items() if v is not None},
        exception=exception,
        verifier_stdout=read_text(p.folder / STDOUT),
        verifier_stderr=read_text(p.folder / STDERR),
        notes=list(ours.get("notes") or []) + ([] if ours else [f"imported from Harbor trial {h.trial_name}"]),
        timings=Timings(**ours["timings"]) if ours.get("timings") else _timings(h),
        tokens={
            "prompt": sum(c.n_input_tokens or 0 for c in contexts),
            "completion": sum(c.n_output_tokens or 0 for c in contexts),
        },
        cost_usd=_total([c.cost_usd for c in contexts]),
        agent_metadata=ours.get("agent_metadata") or _claimed(h, trajectory),
        tamper=ours.get("tamper") or [],
        internet=bool(ours.get("internet", False)),
    )
    trial = {
        "trial_id": trial_id,
        "task": h.task_name,
        "task_hash": task_hash,
        "task_path": task_path,
        "task_source": ours.get("task_source") or h.source,
        "task_metadata": ours.get("task_metadata") or {},
        "verifier_hash": ours.get("verifier_hash"),
        "instruction": instruction,
        "attempt": attempt,
        "agent": h.agent_info.name,
        "agent_version": result.agent_version,
        "model": model,
        "sampling": ours.get("sampling"),
        **{k: ours[k] for k in ("internet", "network") if k in ours},  # as run, where agentmill ran it
        "imported_from": {
            "harbor_job": str(job_dir.resolve()),
            "trial_name": h.trial_name,
            "task_path": named_path,
            "environment": p.environment,
            "verifier_environment_mode": h.verifier_environment_mode
            if h.verifier_environment_mode in ("shared", "separate")
            else None,
        },
    }
    return trial, result, trajectory


def _total(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _task_folder(path) -> str | None:
    """The task folder the job names, only if it is one on this machine: readers (the viewer lists a trial's
    task files) must not be pointed anywhere else by a foreign job. The name as given stays in `imported_from`."""
    if not isinstance(path, str) or not path:
        return None
    p = Path(path)
    try:
        return (
            str(p)
            if p.is_absolute() and p.is_dir() and ((p / "instruction.md").is_file() or (p / "task.toml").is_file())
            else None
        )
    except OSError:
        return None


def _job_result(job_dir: Path, problems: list[str]) -> JobResult | None:
    """The job's result.json (its id, and Harbor's progress counters: current or older names); a job folder
    without one is read all the same, one that does not parse is reported (its trials still import)."""
    try:
        data = read_bytes(job_dir / "result.json")
        return JobResult.model_validate_json(data) if data is not None else None
    except ValidationError as e:
        err = e.errors()[0]
        problems.append(
            f"{job_dir / 'result.json'}: {'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']} "
            "(trial ids derived from the folder's name)"
        )
    except (ValueError, OSError) as e:
        problems.append(f"{job_dir / 'result.json'}: {_one_line(e)}")
    return None


def _claimed(h: HarborTrial, trajectory: Trajectory) -> dict:
    """Harbor's terminus agents end by replying `"task_complete": true`: recorded where telemetry (and the
    `--completion` filter) reads agentmill's terminus claim."""
    if h.agent_info.name not in HARBOR_TEXT_AGENTS:
        return {}
    last = next((s.message for s in reversed(trajectory.steps) if s.source == "agent"), "")
    try:
        reply = json.loads(last)
    except ValueError:
        return {"terminus": {"completed": False}}
    return {"terminus": {"completed": isinstance(reply, dict) and reply.get("task_complete") is True}}


def _trajectory(p: _Parsed) -> Trajectory:
    path = p.folder / TRAJECTORY
    if not path.exists() and not path.is_symlink() and isinstance(p.ours.get("trajectory"), dict):
        return Trajectory.model_validate(p.ours["trajectory"])  # agentmill's export of a trajectory of no step
    if not path.exists() and not path.is_symlink():  # agents that write no ATIF: an empty trajectory, said so
        return Trajectory(
            session_id=p.harbor.trial_name,
            agent=AgentInfo(name=p.harbor.agent_info.name, version=p.harbor.agent_info.version),
            notes="the Harbor trial has no agent/trajectory.json",
        ).summarize()
    data = read_json(path)  # its own errors name the file
    try:
        return trajectory_from_harbor(data, session_id=p.harbor.trial_name)  # ATIF-v1.7 made session_id optional
    except ValidationError as e:
        err = e.errors()[0]
        raise ValueError(f"{TRAJECTORY}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    except ValueError as e:
        raise ValueError(f"{TRAJECTORY}: {e}") from None


def _rewards(p: _Parsed) -> dict[str, float | None]:
    """The verifier's rewards: result.json's verifier_result, else the reward file the verifier left."""
    if p.harbor.verifier_result and p.harbor.verifier_result.rewards:
        return dict(p.harbor.verifier_result.rewards)
    txt, js = (read_bytes(p.folder / "verifier" / name) for name in ("reward.txt", "reward.json"))
    if txt is None and js is None:
        return {}
    try:
        return dict(parse_reward(txt, js)[1])
    except RewardError:
        return {}  # an unreadable reward file is the verifier's error: the outcome says so


def _timings(h: HarborTrial) -> Timings:
    span = lambda t: _seconds(t.started_at, t.finished_at) if t else 0.0  # noqa: E731
    return Timings(
        environment=span(h.environment_setup),
        sandbox_start=span(h.agent_setup),
        agent=span(h.agent_execution),
        verifier=span(h.verifier),
        total=_seconds(h.started_at, h.finished_at),
    )


def _seconds(start: str | None, end: str | None) -> float:
    a, b = _when(start), _when(end)
    return max(0.0, (b - a).total_seconds()) if a and b else 0.0


def _when(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _set_times(ledger: Ledger, trial_id: str, h: HarborTrial) -> None:
    """The ledger's start and finish are when Harbor ran the trial, not when it was imported (status shows wall time)."""
    start, end = _when(h.started_at), _when(h.finished_at)
    if start and end:
        ledger.db.execute(
            "UPDATE trials SET started_at=?, finished_at=? WHERE trial_id=?",
            (start.timestamp(), end.timestamp(), trial_id),
        )


def _write_trial(trials_dir: Path, trial: dict, result: TrialResult, trajectory: Trajectory) -> None:
    """Whole or absent: written under a temporary name, then renamed."""
    final = trials_dir / trial["trial_id"]
    tmp = trials_dir / f".tmp-{trial['trial_id']}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "verifier").mkdir(parents=True)
    (tmp / "trial.json").write_text(json.dumps(trial, indent=2))
    (tmp / "trajectory.json").write_text(trajectory.model_dump_json(indent=2, exclude_none=True))
    (tmp / "verifier" / "stdout.txt").write_text(result.verifier_stdout, errors="replace")
    (tmp / "verifier" / "stderr.txt").write_text(result.verifier_stderr, errors="replace")
    result_dict = json.loads(result.model_dump_json())
    (tmp / "result.json").write_text(json.dumps(result_dict, indent=2))
    (tmp / "telemetry.json").write_text(compute_telemetry(trajectory, result_dict).model_dump_json(indent=2))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def _write_run_config(out: Path, job_dir: Path, parsed: list[_Parsed]) -> None:
    """config.json, so a later `agentmill rollout --out` into this folder is refused (other agent; other
    tasks are refused by the ledger's record of each imported task's hash)."""
    agents = sorted({(p.harbor.agent_info.name, p.harbor.agent_info.version, p.model or "") for p in parsed})
    name, version, model = agents[0] if len(agents) == 1 else ("harbor-import", "mixed", "")
    config = RolloutConfig(dataset=str(job_dir.resolve()), agent=name, agent_version=version, model=model or None)
    write_text_atomic(out / "config.json", config.model_dump_json(indent=2))


def _one_line(e: BaseException) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        return f"{e.title}: {'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']}"
    text = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
    return text if isinstance(e, ValueError) else f"{type(e).__name__}: {text}"
