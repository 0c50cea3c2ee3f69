"""Stage outputs cached by the hash of their inputs and settings.

Each stage's output lives in `<cache>/<stage>/<key>/`; a `done.json` marker (with the stage
report) is written last, so a folder without it is an interrupted stage: rerun (stages that can
resume, like rollouts, pick up inside it). `cache.jsonl` in the run folder records, per run, each
stage that was reused ("cached"), that finished ("ran", written only after its done marker), or
that stopped ("failed", "interrupted", with the error). Nothing is written until a run starts:
planning only reads.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from agentmill.recipe.records import StageReport
from agentmill.runtime.atomic import write_text_atomic
from agentmill.tasks.hashing import hash_text


def stage_key(stage: str, upstream: str, settings: object) -> str:
    return hash_text("agentmill-stage-v1", stage, upstream, json.dumps(settings, sort_keys=True, default=str))[:20]


class StageCache:
    def __init__(self, root: Path, log: Path, run_id: str):
        self.root, self.log, self.run_id = root, log, run_id

    def dir(self, stage: str, key: str) -> Path:
        return self.root / stage / key

    def done(self, stage: str, key: str) -> StageReport | None:
        marker = self.dir(stage, key) / "done.json"
        if not marker.exists():
            return None
        return StageReport.model_validate_json(marker.read_text())

    def finish(self, stage: str, key: str, report: StageReport) -> None:
        write_text_atomic(self.dir(stage, key) / "done.json", report.model_dump_json(indent=2))

    def record(self, stage: str, key: str, status: str, *, error: str | None = None) -> None:
        entry = {"run_id": self.run_id, "stage": stage, "key": key, "status": status, "time": time.time()}
        if error is not None:
            entry["error"] = error
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def read_log(log: Path, run_id: str | None = None) -> list[dict]:
    """Cache records (of one run invocation when `run_id` is given)."""
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in rows if run_id is None or r["run_id"] == run_id]
