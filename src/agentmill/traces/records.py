"""Reading a run folder's finished trials as trace records for filters and exporters."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.traces.atif import Trajectory
from agentmill.traces.handoff import subagent_trajectories
from agentmill.traces.telemetry import Telemetry, compute_telemetry


@dataclass
class TraceRecord:
    trial: dict  # trial.json: identity and provenance
    result: dict  # result.json
    trajectory: Trajectory
    telemetry: Telemetry
    passed_filters: list[str] = field(default_factory=list)
    folder: Path | None = None  # the trial folder it was read from

    @property
    def trial_id(self) -> str:
        return self.trial["trial_id"]

    @property
    def reward(self) -> float | None:
        return self.result.get("reward")

    @property
    def outcome(self) -> str:
        return self.result["outcome"]


def load_trace(folder: Path) -> TraceRecord:
    trial = json.loads((folder / "trial.json").read_text())
    result = json.loads((folder / "result.json").read_text())
    trajectory = read_trajectory((folder / "trajectory.json").read_text())
    tele_path = folder / "telemetry.json"
    if tele_path.exists():
        telemetry = Telemetry.model_validate_json(tele_path.read_text())
    else:  # runs written before telemetry existed: compute now (not stored: the folder is sealed)
        telemetry = compute_telemetry(trajectory, result)
    if (
        not isinstance(trial, dict)
        or not isinstance(result, dict)
        or "trial_id" not in trial
        or "outcome" not in result
    ):
        raise ValueError("trial.json needs trial_id and result.json needs outcome")
    return TraceRecord(trial, result, trajectory, telemetry, folder=folder)


def subagent_records(rec: TraceRecord) -> list[TraceRecord]:
    """The trial's subagent requests (a context handoff's summary, traces/handoff.py) as records of
    their own: trial id `<trial>.summary-<k>`, telemetry marking them subagents (the `subagents` filter)."""
    out = []
    for trajectory in subagent_trajectories(rec.trajectory):
        trial = {**rec.trial, "trial_id": trajectory.session_id, "parent_trial_id": rec.trial_id}
        out.append(
            TraceRecord(trial, rec.result, trajectory, compute_telemetry(trajectory, rec.result), folder=rec.folder)
        )
    return out


def read_trajectory(text: str) -> Trajectory:
    """A trajectory from its JSON text: parsed and validated in one pass, else as Python's json reads it.
    Python's json accepts escaped lone surrogates (and nesting deeper than pydantic's parser allows)
    that the one-pass parser rejects; text is cleaned at render. Whatever the one-pass parser accepts,
    Python's json reads as the same values (tests/traces/test_read_fast.py), so both give one record;
    an invalid trajectory fails here with the same error as before."""
    try:
        return Trajectory.model_validate_json(text)
    except ValueError:
        return Trajectory.model_validate(json.loads(text))


def rollout_folder(path: Path) -> Path:
    """The rollout run folder behind `path`: a rollout folder itself, or a recipe run folder (its `rollout/`)."""
    path = Path(path)
    if (path / "trials").is_dir():
        return path
    if (path / "rollout" / "trials").is_dir():
        return (path / "rollout").resolve()
    if not path.exists():
        raise AgentmillError(f"{path}: no such folder")
    raise AgentmillError(f"{path}: not a run folder (no trials/, and no rollout/trials/ of a recipe run)")


def iter_traces(run_dir: Path, *, errors: list[str] | None = None) -> Iterator[TraceRecord]:
    """Every finished trial of a run (a rollout folder or a recipe run folder), in a stable order,
    each followed by its subagents' records. Unreadable folders are reported, not fatal."""
    for folder in trial_folders(run_dir):
        try:
            rec = load_trace(folder)
        except UNREADABLE as e:
            if errors is not None:
                errors.append(unreadable(folder, e))
            continue
        yield rec
        try:
            subagents = subagent_records(rec)
        except UNREADABLE as e:  # a broken subagent record costs only itself
            subagents = []
            if errors is not None:
                errors.append(unreadable(folder, e))
        yield from subagents


UNREADABLE = (OSError, ValueError, KeyError, TypeError)  # a trial folder that cannot be read is skipped


def unreadable(folder: Path, e: Exception) -> str:
    """The line that reports a skipped trial folder."""
    return f"{folder}: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


def trial_folders(run_dir: Path) -> TrialFolders:
    """The trial folders of a run, in the stable order every export follows (by name)."""
    trials = rollout_folder(run_dir) / "trials"
    with os.scandir(trials) as entries:
        names = sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    return TrialFolders(trials, names)


class TrialFolders(Sequence[Path]):
    """Trial folders held as their names under one folder: a Path object each would cost some 500
    bytes (50 MB at 100,000 trials, in the exporter and in each worker it forks). A slice is a
    TrialFolders too (a chunk sent to a worker is a folder and some names)."""

    def __init__(self, trials: Path, names: list[str]):
        self.trials, self.names = trials, names

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return TrialFolders(self.trials, self.names[index])
        return self.trials / self.names[index]
