"""Diagnosis: which evaluation tasks are worth synthesising from.

teach   = the target fails (pass rate <= target_max) and the teacher succeeds (>= teacher_min);
stretch = both fail (target <= target_max, teacher < teacher_min);
avoid   = the target already succeeds (>= avoid_min).
A task whose target rate falls between the thresholds, or that lacks attempted trials on either side,
is `undecided` with the reason, never silently dropped.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentmill.rollout.folder import resolve_run_dir
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.status import NOT_SCORED

Label = Literal["teach", "stretch", "avoid", "undecided"]
EPS = 1e-9  # so 1/3 written as 0.3333 or computed as 1/3 compares as intended


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target_max: float = Field(1 / 3, ge=0, le=1)
    teacher_min: float = Field(2 / 3, ge=0, le=1)
    avoid_min: float = Field(2 / 3, ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.target_max >= self.avoid_min:
            raise ValueError(f"target_max ({self.target_max}) must be below avoid_min ({self.avoid_min})")
        return self


class TaskPasses(BaseModel):
    model_config = ConfigDict(extra="forbid")
    attempts: int = Field(ge=0)
    passes: int = Field(ge=0)

    @model_validator(mode="after")
    def _bounded(self) -> TaskPasses:
        if self.passes > self.attempts:
            raise ValueError(f"passes ({self.passes}) exceed attempts ({self.attempts})")
        return self

    @property
    def rate(self) -> float | None:
        return self.passes / self.attempts if self.attempts else None


class TaskDiagnosis(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str
    label: Label
    target: TaskPasses
    teacher: TaskPasses
    reason: str


class Diagnosis(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thresholds: Thresholds
    tasks: list[TaskDiagnosis]

    def by_label(self, label: Label) -> list[str]:
        return [t.task for t in self.tasks if t.label == label]


def classify_task(task: str, target: TaskPasses, teacher: TaskPasses, th: Thresholds) -> TaskDiagnosis:
    t, s = target.rate, teacher.rate

    def out(label: Label, reason: str) -> TaskDiagnosis:
        return TaskDiagnosis(task=task, label=label, target=target, teacher=teacher, reason=reason)

    if t is None:
        return out("undecided", "no attempted target trials")
    if t >= th.avoid_min - EPS:
        return out("avoid", f"target passes {target.passes}/{target.attempts} >= {th.avoid_min:.3g}")
    if t > th.target_max + EPS:
        return out("undecided", f"target rate {t:.3g} between {th.target_max:.3g} and {th.avoid_min:.3g}")
    if s is None:
        return out("undecided", "no attempted teacher trials")
    if s >= th.teacher_min - EPS:
        return out("teach", f"target {target.passes}/{target.attempts}, teacher {teacher.passes}/{teacher.attempts}")
    return out(
        "stretch", f"both fail: target {target.passes}/{target.attempts}, teacher {teacher.passes}/{teacher.attempts}"
    )


def classify(
    target: dict[str, TaskPasses], teacher: dict[str, TaskPasses], thresholds: Thresholds | None = None
) -> Diagnosis:
    """Every task seen by either model, in name order; a side with no trials counts as 0/0."""
    th = thresholds or Thresholds()
    empty = TaskPasses(attempts=0, passes=0)
    tasks = sorted(set(target) | set(teacher))
    return Diagnosis(
        thresholds=th, tasks=[classify_task(n, target.get(n, empty), teacher.get(n, empty), th) for n in tasks]
    )


def read_pass_counts(run_dir: Path) -> dict[str, TaskPasses]:
    """Per-task attempts and passes from a rollout (or recipe run) folder. Only finished trials the agent
    actually attempted count: infrastructure failures are not the model's failures."""
    run_dir = resolve_run_dir(run_dir)
    ledger = Ledger(run_dir / "ledger.sqlite")
    try:
        rows = ledger.rows()
    finally:
        ledger.close()
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["state"] != "done" or r["outcome"] in NOT_SCORED:  # infra failures, unjudged trials
            continue
        counts[r["task"]][0] += 1
        counts[r["task"]][1] += r["outcome"] == "passed"
    return {task: TaskPasses(attempts=a, passes=p) for task, (a, p) in sorted(counts.items())}
