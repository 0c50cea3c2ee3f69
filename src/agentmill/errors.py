"""Errors that name the file (or field) and the problem in one line, and say whose fault they are.

The error model: every failure agentmill raises is an AgentmillError, and its class says whose it is.
- the user's: a bad option, recipe key or name (AgentmillError itself; registry.UnknownNameError,
  registry.DuplicateNameError; view.trial.NotFoundError for a trial or file the viewer was asked for);
- the task's: TaskError (a malformed task folder), NeedsContainerError (its environment cannot be
  built here), images.errors.ImageBuildError (its Dockerfile failed; images.layers.LayerError is one
  step of it), verify.outcome.RewardError (its verifier wrote no usable reward): trials end `task_error`
  or fail verification;
- the harness's: SandboxError and its kinds (SandboxStartError, GuestError, the terminal's control
  channel's errors in sandbox/tmux_channel.py, the conformance suite's ConformanceFailure): trials end
  `sandbox_error` unless the agent's own commands caused it;
- the endpoint's: models.client.EndpointError after its retries: trials end `infra_error`;
- the agent's: AgentError (a model reply that cannot be used, agents/terminus/parse.py's ReplyError) is
  not raised past the trial: it goes back to the model, or the trial ends `agent_error`,
  `agent_timeout`, `context_exceeded` with the exception text kept;
- nobody's: rl.policy.PolicyExhaustedError says the RL policy has no further turn (the episode ends
  there and is verified).

Not in the vocabulary, on purpose: code that runs inside the sandbox on the guest's own python3
(sandbox/guest/, tools/guest/, grounded/artifacts.py as each grounded task's check_artifacts.py) cannot
import agentmill, and private control-flow signals (a leading underscore) never leave their module.
tests/test_errors.py holds every exception class to this.
"""

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


class GuestError(SandboxError):
    """The guest exec server answered a request with a failure; `kind` is the protocol's name for it
    ("not_found", "bad_request", "os_error", "error"), so callers never parse the message."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


class SandboxStartError(SandboxError):
    """The sandbox never came up: the machinery's fault, whatever the agent had done so far."""


class AgentError(AgentmillError):
    """The agent's own doing (its model's reply cannot be used, say): it goes back to the model or ends
    the trial as the agent's failure, never as the harness's."""


class InfraStopError(AgentmillError):
    """Infrastructure (an endpoint, most often) stopped the work: nothing was made final, and the same
    command retries once it is fixed. Commands exit with code 3 (exit_codes.INFRA)."""
