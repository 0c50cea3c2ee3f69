"""One trial folder as the viewer shows it: result, trajectory steps, verifier output, reward, task.

Everything here is data the agent could have shaped; it is returned as JSON and the page renders
it as text, never as markup. Files are read with size caps, and task files only from inside the
task's own folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.view.index import read_json

TEXT_CAP = 2_000_000  # characters of one file shown; the rest is cut with a note
TASK_FILE_CAP = 300_000
TASK_LISTING_CAP = 500


class NotFoundError(AgentmillError):
    """The trial, or the file asked for, does not exist (or is outside what may be shown)."""


def read_text(path: Path, cap: int = TEXT_CAP) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(cap * 4 + 4)
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    if len(text) > cap:
        text = text[:cap] + f"\n[... cut by the viewer at {cap} characters ...]"
    return text


def trial_folder(trials_dir: Path, trial_id: str) -> Path:
    """The folder of `trial_id`, refusing names that are not plain folder names."""
    if not trial_id or "/" in trial_id or "\\" in trial_id or trial_id in (".", "..") or trial_id.startswith("."):
        raise NotFoundError(f"trial {trial_id!r}")
    folder = trials_dir / trial_id
    if not folder.is_dir():
        raise NotFoundError(f"trial {trial_id!r}: no folder")
    return folder


def load_trial(trials_dir: Path, trial_id: str) -> dict:
    folder = trial_folder(trials_dir, trial_id)
    trial = read_json(folder / "trial.json") or {}
    result = read_json(folder / "result.json") or {}
    trajectory_text = read_text(folder / "trajectory.json", cap=50_000_000)
    try:
        trajectory = json.loads(trajectory_text) if trajectory_text else None
    except ValueError as e:
        trajectory = {"error": f"trajectory.json: {e}"}
    verifier = {}
    vdir = folder / "verifier"
    if vdir.is_dir():
        for p in sorted(vdir.iterdir())[:50]:
            if p.is_file() and not p.is_symlink():
                verifier[p.name] = read_text(p)
    return {
        "trial_id": trial_id,
        "trial": trial,
        "result": result,
        "telemetry": read_json(folder / "telemetry.json"),
        "trajectory": trajectory,
        "verifier_files": verifier,  # stdout/stderr, and reward.txt / reward.json when the folder keeps them
        "task": task_summary(trial),
    }


def task_dir(trial: dict) -> Path | None:
    path = trial.get("task_path")
    if not isinstance(path, str) or not path:
        return None
    p = Path(path)
    return p if p.is_dir() else None


def task_summary(trial: dict) -> dict:
    """The task's instruction (as the trial recorded it) and its files, when the task folder still exists."""
    root = task_dir(trial)
    files = _listing(root) if root is not None else []
    return {
        "name": trial.get("task"),
        "path": trial.get("task_path"),
        "exists": root is not None,
        "instruction": trial.get("instruction"),
        "metadata": trial.get("task_metadata"),
        "files": files,
        "files_cut": len(files) >= TASK_LISTING_CAP,
    }


def _listing(root: Path) -> list[dict]:
    """The first TASK_LISTING_CAP plain files under root, in path order, without walking the rest
    (an environment may hold tens of thousands of files)."""
    files: list[dict] = []
    for folder, dirs, names in os.walk(root):  # links to folders are not followed
        dirs.sort()
        for name in sorted(names):
            p = Path(folder) / name
            if p.is_file() and not p.is_symlink():
                files.append({"path": p.relative_to(root).as_posix(), "bytes": p.stat().st_size})
            if len(files) >= TASK_LISTING_CAP:
                return files
    return files


def task_file(trials_dir: Path, trial_id: str, rel: str) -> dict:
    """One file of the trial's task folder; a path that leaves the folder (.., links) is refused."""
    trial = read_json(trial_folder(trials_dir, trial_id) / "trial.json") or {}
    root = task_dir(trial)
    if root is None:
        raise NotFoundError("the task folder no longer exists")
    root = root.resolve()
    target = (root / rel).resolve()
    if not rel or Path(rel).is_absolute() or not target.is_relative_to(root) or target == root:
        raise NotFoundError(f"{rel!r} is not a file of the task")
    if (root / rel).is_symlink() or not target.is_file():
        raise NotFoundError(f"{rel!r} is not a file of the task")
    return {"path": rel, "text": read_text(target, TASK_FILE_CAP)}
