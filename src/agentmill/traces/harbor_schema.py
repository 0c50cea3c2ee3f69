"""Harbor's job folder, as Harbor (laude-institute/harbor) writes it: the records and the outcome mapping.

    JOB/config.json                  the job's config (JobConfig: job_name, n_attempts, agents, datasets, ...)
    JOB/result.json                  JobResult: id, started_at, finished_at, n_total_trials, stats
    JOB/<trial_name>/config.json     TrialConfig: task, trial_name, agent, environment, verifier, job_id
    JOB/<trial_name>/result.json     TrialResult (below)
    JOB/<trial_name>/agent/trajectory.json        the ATIF trajectory (agents that write one)
    JOB/<trial_name>/verifier/test-stdout.txt, test-stderr.txt, reward.txt | reward.json
    JOB/<trial_name>/exception.txt   the exception's text, when the trial raised

Harbor adds fields between releases and its own models ignore unknown keys, so these reading
models do too (a foreign format: `extra="ignore"`, unlike agentmill's own records).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


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
    exception_info: ExceptionInfo | None = None
    started_at: str | None = None
    finished_at: str | None = None
    environment_setup: TimingInfo | None = None
    agent_setup: TimingInfo | None = None
    agent_execution: TimingInfo | None = None
    verifier: TimingInfo | None = None


# Harbor's agents that speak in the reply text (JSON keystrokes) and see the terminal as the next
# user turn, as agentmill's terminus does: their trajectories render as that conversation
HARBOR_TEXT_AGENTS = frozenset({"terminus", "terminus-1", "terminus-2"})

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
}

_VERIFIER_ERRORS = ("RewardFileNotFoundError", "RewardFileEmptyError", "VerifierOutputParseError", "VerifierError")
_INFRA_WORDS = ("RateLimit", "APIConnection", "APITimeout", "APIError", "ServiceUnavailable", "InternalServer",
                "Cancelled")  # a cancelled trial never finished: the machinery's doing, not the agent's


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
    """The key of a job's `stats.evals`: agent, model (when there is one) and dataset, joined by '__'."""
    return "__".join(p for p in (agent, model.split("/")[-1] if model else None, dataset) if p)
