"""Harbor's job folder, as Harbor (laude-institute/harbor) writes it: the records and the outcome mapping.

    JOB/config.json                  the job's config (JobConfig: job_name, n_attempts, agents, datasets, ...)
    JOB/lock.json                    JobLock: the resolved inputs of every trial (config.py writes it)
    JOB/result.json                  JobResult: id, started_at, updated_at, finished_at, n_total_trials, stats
    JOB/<trial_name>/config.json     TrialConfig: task, trial_name, agent, environment, verifier, job_id
    JOB/<trial_name>/lock.json       TrialLock: the trial's resolved inputs (its task's digest)
    JOB/<trial_name>/result.json     TrialResult (below)
    JOB/<trial_name>/agent/trajectory.json        the ATIF trajectory (agents that write one)
    JOB/<trial_name>/verifier/test-stdout.txt, test-stderr.txt, reward.txt | reward.json
    JOB/<trial_name>/exception.txt   the exception's text, when the trial raised

Harbor adds fields between releases and its own models ignore unknown keys, so these reading
models do too (a foreign format: `extra="ignore"`, unlike agentmill's own records).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

TRAJECTORY = "agent/trajectory.json"
STDOUT, STDERR = "verifier/test-stdout.txt", "verifier/test-stderr.txt"


class _Harbor(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TimingInfo(_Harbor):
    started_at: str | None = None
    finished_at: str | None = None


class ExceptionInfo(_Harbor):
    exception_type: str
    exception_message: str = ""
    exception_traceback: str = ""
    occurred_at: str | None = None


class ModelInfo(_Harbor):
    name: str
    provider: str | None = None


class AgentInfo(_Harbor):
    name: str
    version: str = "unknown"
    model_info: ModelInfo | None = None


class AgentContext(_Harbor):
    n_input_tokens: int | None = None  # includes cached tokens
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    rollout_details: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None


class VerifierResult(_Harbor):
    rewards: dict[str, float | int | None] | None = None


class StepResult(_Harbor):
    """One step of a multi-step trial: Harbor records its tokens and a handled failure here, not on the trial."""

    step_name: str | None = None
    agent_result: AgentContext | None = None
    exception_info: ExceptionInfo | None = None


class TrialResult(_Harbor):
    id: str | None = None
    task_name: str
    trial_name: str
    trial_uri: str | None = None
    task_id: dict[str, Any] | None = None  # {"path": ...} or {"git_url": ..., "git_commit_id": ..., "path": ...}
    source: str | None = None  # the dataset's name
    task_checksum: str | None = None
    config: dict[str, Any] | None = None
    agent_info: AgentInfo
    agent_result: AgentContext | None = None
    verifier_result: VerifierResult | None = None
    verifier_environment_mode: str | None = None  # "shared" (the agent's environment) or "separate"
    exception_info: ExceptionInfo | None = None
    started_at: str | None = None
    finished_at: str | None = None
    environment_setup: TimingInfo | None = None
    agent_setup: TimingInfo | None = None
    agent_execution: TimingInfo | None = None
    verifier: TimingInfo | None = None
    step_results: list[StepResult] | None = None  # multi-step trials

    def recorded_exceptions(self) -> list[ExceptionInfo]:
        """The trial's exception first, then each step's, in step order (a multi-step trial records them on steps)."""
        steps = [s.exception_info for s in self.step_results or [] if s.exception_info is not None]
        return ([self.exception_info] if self.exception_info else []) + steps

    def token_contexts(self) -> list[AgentContext]:
        """Where the tokens are: the trial's agent_result, else each step's (multi-step trials)."""
        if self.agent_result is not None:
            return [self.agent_result]
        return [s.agent_result for s in self.step_results or [] if s.agent_result is not None]


class TaskLock(_Harbor):
    # the task's content hash, which Harbor means to replace task_checksum; Harbor refuses any other form
    digest: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")


class TrialLock(_Harbor):
    """A trial folder's lock.json, as far as agentmill reads it."""

    task: TaskLock | None = None


class JobStats(_Harbor):
    """A job's result.json `stats`. Harbor's older releases wrote n_trials/n_errors, its current ones the
    n_*_trials counters; either reads (the old names fill the new ones, as Harbor's own reader does)."""

    n_completed_trials: int = 0
    n_errored_trials: int = 0
    n_running_trials: int = 0
    n_pending_trials: int = 0
    n_cancelled_trials: int = 0
    n_retries: int = 0
    evals: dict[str, dict[str, Any]] = Field(default_factory=dict)
    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for old, new in (("n_trials", "n_completed_trials"), ("n_errors", "n_errored_trials")):
                if new not in data and old in data:
                    data[new] = data[old]
        return data


class JobResult(_Harbor):
    id: str
    started_at: str | None = None
    updated_at: str | None = None
    finished_at: str | None = None
    n_total_trials: int = 0
    stats: JobStats = Field(default_factory=JobStats)


# agentmill outcome -> the exception type Harbor records for it (passed/failed: none)
EXCEPTION_OF: dict[str, str] = {  # outcomes by their value (verify/outcome.py): traces sit below verify
    "agent_error": "AgentError",
    "agent_timeout": "AgentTimeoutError",
    "context_exceeded": "ContextLengthExceededError",
    "verifier_error": "RewardFileNotFoundError",
    "verifier_timeout": "VerifierTimeoutError",
    "sandbox_error": "EnvironmentStartError",
    "infra_error": "APIConnectionError",
    "task_error": "TaskSetupError",  # the task is broken (environment build, gym or seed): Harbor has no such type
    "unjudged": "JudgeNotConfiguredError",  # a judged check never ran (no judge): no reward; Harbor has no such type
    "unverified": "NoVerifierError",  # a task with no verifier (reward null): Harbor has no such type either
}

# Harbor's error policy per exception type (models/trial/error_policy.py): (retried, graded, reward still valid).
# A trial's reward counts in the job's stats only while every exception it recorded leaves the reward valid.
# A type Harbor does not list gets all three; these are the types agentmill writes or reads back from Harbor.
_POLICIES: dict[tuple[bool, bool, bool], tuple[str, ...]] = {
    (False, True, True): (
        "AgentTimeoutError",
        "ContextLengthExceededError",
        "ContextWindowExceededError",
        "OutputLengthExceededError",
        "NonZeroAgentExitCodeError",
    ),
    (False, True, False): (
        "VerifierTimeoutError",
        "JudgeNotConfiguredError",
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierOutputParseError",
    ),
    (True, True, False): (
        "APIConnectionError",
        "APIError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "Timeout",
    ),
    (True, False, False): ("EnvironmentStartTimeoutError", "SandboxBuildFailedError", "AgentSetupTimeoutError"),
    (False, False, False): ("CancelledError", "NoVerifierError"),
}
_POLICY_OF = {name: policy for policy, names in _POLICIES.items() for name in names}


def error_policy(exception_type: str) -> dict[str, bool]:
    """The `policy` Harbor records on an exception_info (a computed field: Harbor derives it again on reading)."""
    retry, grade, valid = _POLICY_OF.get(exception_type, (True, True, True))
    return {"should_retry": retry, "should_grade": grade, "has_valid_reward": valid}


def harbor_exception(outcome: str, exception: str | None, reward: float | None) -> tuple[str, str] | None:
    """(exception type, message) Harbor records for an agentmill outcome (None: passed or failed). An exception
    text that starts with a type name of the same outcome (`DockerComposeError: ...`, as an imported Harbor trial
    carries) keeps that type, so a Harbor job imported and exported again keeps its exception types."""
    kind = EXCEPTION_OF.get(outcome)
    if kind is None:
        return None
    named = re.match(r"([A-Za-z_][A-Za-z0-9_]{0,99}): (.*)", exception or "", re.S)
    if named and outcome_of(named.group(1), reward) == outcome:
        return named.group(1), named.group(2)
    return kind, exception or outcome


_VERIFIER_ERRORS = ("RewardFileNotFoundError", "RewardFileEmptyError", "VerifierOutputParseError", "VerifierError")
_INFRA_WORDS = (
    "RateLimit",
    "APIConnection",
    "APITimeout",
    "APIError",
    "ServiceUnavailable",
    "InternalServer",
    "Cancelled",
)  # a cancelled trial never finished: the machinery's doing, not the agent's


def outcome_of(exception_type: str | None, reward: float | None) -> str:
    """A Harbor trial's typed outcome, from its exception type (Harbor's names) and its reward."""
    if not exception_type:
        if reward is None:
            return "verifier_error"  # finished without an exception and without a reward
        return "passed" if reward >= 1.0 - 1e-9 else "failed"
    if exception_type == "AgentTimeoutError":
        return "agent_timeout"
    if exception_type == "VerifierTimeoutError":
        return "verifier_timeout"
    if exception_type in _VERIFIER_ERRORS:
        return "verifier_error"
    if exception_type == "TaskSetupError":
        return "task_error"
    if exception_type == "JudgeNotConfiguredError":
        return "unjudged"
    if exception_type == "NoVerifierError":
        return "unverified"
    if "ContextLength" in exception_type:
        return "context_exceeded"
    if any(w in exception_type for w in ("Environment", "Docker", "Daytona", "Modal", "Sandbox", "Build")):
        return "sandbox_error"
    if any(w in exception_type for w in _INFRA_WORDS):
        return "infra_error"
    return "agent_error"  # anything else was raised while the agent ran


def scalar_reward(rewards: dict[str, float | int | None] | None) -> float | None:
    """Harbor's reward dict -> one number, as agentmill reads reward.json: "reward" if present, else the mean."""
    if not rewards:
        return None
    values = {k: float(v) for k, v in rewards.items() if v is not None and not isinstance(v, bool)}
    if not values:
        return None
    return values.get("reward", sum(values.values()) / len(values))


def eval_key(agent: str, model: str | None, dataset: str) -> str:
    """The key of a job's `stats.evals` (harbor: JobStats.format_agent_evals_key): agent, the model as its
    `model_info.name` (when there is one) and dataset, joined by '__'."""
    return "__".join(p for p in (agent, model, dataset) if p)
