"""A rollout's plan, streamed: tasks go in as references, trials come out of the ledger page by page.

The driver's memory must not grow with the dataset. Planning needs only each task's name, folder
and content hash (`TaskRef`), one task at a time (`TaskList` spills them to disk for the CLI); the
plan and each task's recorded hash are written to the ledger as they are made; the trials to run are
read back from the ledger a page at a time; and a task is loaded from its folder when its trial is
dispatched, checked against the hash it was planned with, and released once its trial is recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from agentmill.errors import TaskError
from agentmill.rollout.identity import trial_id
from agentmill.rollout.network import internet_allowed
from agentmill.tasks.io import load_task
from agentmill.tasks.model import Task


@dataclass(frozen=True, slots=True)
class TaskRef:
    """What planning needs of a task; the task itself is loaded when its trial is dispatched."""

    name: str
    path: str  # the task folder (a str: a Path object per task costs three times its size)
    content_hash: str
    allow_internet: bool = False  # task.toml's allow_internet: a trial's id counts the agent's network

    @classmethod
    def of(cls, task: Task | TaskRef) -> TaskRef:
        if isinstance(task, TaskRef):
            return task
        return cls(task.name, str(task.path), task.content_hash, task.config.environment.allow_internet)

    def load(self) -> Task:
        """The task, as planned: a folder edited since planning is refused (its trials would be another task's)."""
        task = load_task(self.path)
        if task.content_hash != self.content_hash:
            raise TaskError(
                self.path,
                f"edited since this run planned it (content hash {self.content_hash[:12]}, now "
                f"{task.content_hash[:12]}); a resume refuses the edited task: use a new --out for it",
            )
        return task


@dataclass(slots=True)
class TrialPlan:
    trial_id: str
    ref: TaskRef
    attempt: int
    task: Task | None = None  # loaded when dispatched (`load`), released once the trial is recorded
    problem: str | None = None  # why the task could not be loaded: the trial ends task_error unrun

    def load(self) -> TrialPlan:
        """Load the task if it is not loaded; a folder that no longer loads as planned sets `problem`."""
        if self.task is None and self.problem is None:
            try:
                self.task = self.ref.load()
            except TaskError as e:
                self.problem = str(e)
            except OSError as e:  # the folder went away or became unreadable while it was hashed
                self.problem = f"{self.ref.path}: could not be read again since planning ({e})"
        return self


def plan_trials(config, tasks: Iterable[Task | TaskRef], copies: dict[str, int] | None = None) -> Iterator[TrialPlan]:
    """The trials of `tasks`, one task at a time: attempts per task = config.attempts x its copies
    (upsampled tasks get more attempts). A byte-identical duplicate of an earlier task makes the
    same trial ids: the ledger's plan keeps the first (Ledger.planning), so nothing here remembers
    the tasks already seen."""
    copies = copies or {}
    for t in tasks:
        loaded = t if isinstance(t, Task) else None
        ref = TaskRef.of(t)
        internet = internet_allowed(config.network, ref.allow_internet)
        for a in range(config.attempts * copies.get(t.content_hash, 1)):
            yield TrialPlan(trial_id(config, t.content_hash, a, internet=internet), ref, a, task=loaded)
