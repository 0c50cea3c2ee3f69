"""The viewer's source for rollout folders and recipe run folders (through their rollout)."""

from __future__ import annotations

from pathlib import Path

from agentmill.rollout.folder import resolve_run_dir
from agentmill.view.index import TrialIndex, read_json
from agentmill.view.queries import BadQuery, TrialQuery, attempts_of, facets, list_trials
from agentmill.view.source import register_source
from agentmill.view.trial import NotFoundError, load_trial, task_file
from agentmill.view.verdicts import judge_for


class RolloutSource:
    kind = "rollout"

    def __init__(self, path: Path, *, filters: Path | None = None, index: Path | None = None, progress=None):
        self.path = Path(path)
        self.rollout_dir = resolve_run_dir(self.path)
        self.title = self.path.resolve().name
        self.judge = judge_for(self.path, self.rollout_dir, filters)
        self.index = TrialIndex(self.rollout_dir, self.judge, path=index)
        self.index.sync(force=True, progress=progress)

    def routes(self):
        return {"summary": self.summary, "trials": self.trials, "trial": self.trial, "task-file": self.task_file}

    def close(self) -> None:
        pass

    def _db(self):
        self.index.sync()  # cheap when nothing changed; follows a run in progress
        return self.index.connect()

    def summary(self, params) -> dict:
        db = self._db()
        try:
            f = facets(db)
        finally:
            db.close()
        config = read_json(self.rollout_dir / "config.json") or {}
        return {
            "kind": self.kind,
            "title": self.title,
            "path": str(self.path),
            "rollout_dir": str(self.rollout_dir),
            "agent": config.get("agent"),
            "model": config.get("model"),
            "facets": f,
            "filters": {"source": self.judge.source, "rules": self.judge.descriptions},
        }

    def trials(self, params) -> dict:
        query = TrialQuery.from_params(params)
        db = self._db()
        try:
            return list_trials(db, query)
        finally:
            db.close()

    def trial(self, params) -> dict:
        trial_id = _one(params, "id")
        db = self._db()
        try:
            row = db.execute("SELECT * FROM trials WHERE trial_id = ?", (trial_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"trial {trial_id!r}: not in the ledger")
            attempts = attempts_of(db, row["task"], row["task_hash"])
        finally:
            db.close()
        try:
            data = load_trial(self.rollout_dir / "trials", trial_id)
        except NotFoundError:  # running, or its folder was lost: the ledger row is all there is
            data = {"trial_id": trial_id, "missing_folder": True}
        data["row"] = dict(row)
        data["attempts"] = attempts
        data["filter_rules"] = self.judge.descriptions
        return data

    def task_file(self, params) -> dict:
        return task_file(self.rollout_dir / "trials", _one(params, "id"), _one(params, "path"))


def _one(params, name: str) -> str:
    value = params.get(name, [""])[-1]
    if not value:
        raise BadQuery(f"parameter '{name}' is required")
    return value


def _open(path: Path, **options) -> RolloutSource | None:
    if (
        (path / "ledger.sqlite").is_file()
        or (path / "rollout" / "ledger.sqlite").is_file()
        or (path / "funnel.json").exists()
        or (path / "cache.jsonl").exists()
    ):
        return RolloutSource(path, **options)  # a recipe run without its rollout: resolve_run_dir says so
    return None


register_source("rollout", _open)
