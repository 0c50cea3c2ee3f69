"""Errors that name the file (or field) and the problem in one line."""

from __future__ import annotations

from pathlib import Path


class AgentmillError(Exception):
    """Base class for errors shown to users as one clear line."""


class TaskError(AgentmillError):
    """A task directory is malformed. `path` names the offending file."""

    def __init__(self, path: Path | str, problem: str):
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class NeedsContainerError(AgentmillError):
    """The task's environment cannot be built faithfully without a container engine."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"needs a container backend: {reason}")


class SandboxError(AgentmillError):
    """The sandbox could not start, broke, or was lost."""


class SandboxStartError(SandboxError):
    """The sandbox never came up: the machinery's fault, whatever the agent had done so far."""


class InfraStopError(AgentmillError):
    """Infrastructure (an endpoint, most often) stopped the work: nothing was made final, and the same
    command retries once it is fixed. Commands exit with code 3 (exit_codes.INFRA)."""
