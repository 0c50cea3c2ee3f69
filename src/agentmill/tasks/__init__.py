"""Tasks: the Harbor task directory (and legacy Terminal-Bench), datasets, content hashes."""

from agentmill.tasks import builtin_kinds  # noqa: F401  (registers the bundled kinds)
from agentmill.tasks.dataset import Dataset, load_dataset, sample_dataset_path, sample_tools_path
from agentmill.tasks.io import load_task, write_task
from agentmill.tasks.model import Task, TaskConfig

__all__ = [
    "Dataset",
    "Task",
    "TaskConfig",
    "load_dataset",
    "load_task",
    "sample_dataset_path",
    "sample_tools_path",
    "write_task",
]
