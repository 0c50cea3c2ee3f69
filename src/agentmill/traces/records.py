"""Reading a run folder's finished trials as trace records for filters and exporters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.traces.atif import Trajectory
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
    # Python's json accepts escaped lone surrogates that a strict parser rejects; text is cleaned at render.
    trajectory = Trajectory.model_validate(json.loads((folder / "trajectory.json").read_text()))
    tele_path = folder / "telemetry.json"
    if tele_path.exists():
        telemetry = Telemetry.model_validate_json(tele_path.read_text())
    else:  # runs written before telemetry existed: compute now (not stored: the folder is sealed)
        telemetry = compute_telemetry(trajectory, result)
    if not isinstance(trial, dict) or not isinstance(result, dict) or "trial_id" not in trial or "outcome" not in result:
        raise ValueError("trial.json needs trial_id and result.json needs outcome")
    return TraceRecord(trial, result, trajectory, telemetry, folder=folder)


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
    """Every finished trial of a run (a rollout folder or a recipe run folder), in a stable order.
    Unreadable folders are reported, not fatal."""
    trials = rollout_folder(run_dir) / "trials"
    for folder in sorted(p for p in trials.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            yield load_trace(folder)
        except (OSError, ValueError, KeyError, TypeError) as e:
            if errors is not None:
                errors.append(f"{folder}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
