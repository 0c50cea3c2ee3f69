"""What flows between recipe stages: task entries (before rollouts) and stage reports (funnel)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentmill.runtime.atomic import write_text_atomic


class TaskEntry(BaseModel):
    """One task in a recipe's task set. `path` is a Harbor task folder on disk."""

    model_config = ConfigDict(extra="forbid")

    name: str  # unique within the set
    path: str
    source: str  # the recipe source it came from
    content_hash: str
    instruction: str
    parent: str | None = None  # for augmented tasks: the original's content hash
    strategy: str | None = None  # augmentation strategy that made it
    weight: float = 1.0  # sampling weight for upsampling (e.g. from response length)
    scores: dict[str, float] = Field(default_factory=dict)  # task-filter scores (askllm, response_length, ...)


class Drop(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    reason: str


class StageReport(BaseModel):
    """Counts in and out of one stage, with a reason for every drop: one step of the funnel."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    kind: str = ""
    count_in: int = 0
    count_out: int = 0
    dropped: list[Drop] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.dropped:
            out[d.reason] = out.get(d.reason, 0) + 1
        return out


def save_tasks(tasks: list[TaskEntry], path: Path) -> None:
    write_text_atomic(path, "\n".join(t.model_dump_json() for t in tasks) + ("\n" if tasks else ""))


def load_tasks(path: Path) -> list[TaskEntry]:
    return [TaskEntry.model_validate(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
