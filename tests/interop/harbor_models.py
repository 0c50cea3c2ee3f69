"""A test double of Harbor's reader: its job-folder models re-declared, field by field, from Harbor's source
(laude-institute/harbor, release 0.26: src/harbor/models/job/{config,result,lock}.py,
models/trial/{config,result}.py, models/agent/context.py, models/verifier/result.py,
models/trajectories/*.py). Written here, not imported: Harbor is not a dependency.

Stricter than Harbor in one way, on purpose: every model forbids keys it does not declare (Harbor's job
and trial models ignore them), so a misspelt or invented key in what agentmill writes fails here. Harbor's
computed fields (`reward_valid`, an exception's `policy`) are declared, since Harbor writes them. The
checks Harbor makes across fields are re-declared too: a task or dataset is a `path` or a `name`, never
both; digests are `sha256:<64 hex>`; ATIF step ids count from 1, agent-only fields sit on agent steps,
observations answer the step's own tool calls, timestamps are ISO 8601.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- trial config (models/trial/config.py) ----


class AgentConfig(_Strict):
    name: str | None = None
    import_path: str | None = None
    model_name: str | None = None
    base_url: str | None = None
    model_api_key_name: str | None = None
    model_api_format: str | None = None
    skip_model_parsing: bool = False
    n_concurrent: int | None = Field(default=None, ge=1)
    concurrency_group: str | None = None
    skills: list[str] = Field(default_factory=list)
    override_timeout_sec: float | None = None
    override_setup_timeout_sec: float | None = None
    max_timeout_sec: float | None = None
    resume_trajectory: bool = False
    load_trajectory: str | None = None
    extra_allowed_hosts: list[str] = Field(default_factory=list)
    include_logs: list[str] = Field(default_factory=list)
    exclude_logs: list[str] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)


ResourceMode = Literal["auto", "limit", "request", "guarantee", "ignore"]
# a few of Harbor's EnvironmentType values (models/environment_type.py): a made-up backend name fails
EnvironmentType = Literal["docker", "podman", "daytona", "e2b", "modal", "runloop", "singularity"]


class EnvironmentConfig(_Strict):
    type: EnvironmentType | None = None
    import_path: str | None = None
    force_build: bool = False
    delete: bool = True
    stream: bool = False
    cpu_enforcement_policy: ResourceMode = "auto"
    memory_enforcement_policy: ResourceMode = "auto"
    override_cpus: int | float | None = None
    override_memory_mb: int | None = None
    override_storage_mb: int | None = None
    override_gpus: int | None = None
    override_tpu: dict[str, Any] | None = None
    mounts: list[dict[str, Any]] | None = None
    extra_docker_compose: list[Path] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    extra_allowed_hosts: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_backend(self):  # Harbor defaults a config naming neither to docker; agentmill must name its own
        if self.type is None and self.import_path is None:
            raise ValueError("environment: neither type nor import_path")
        return self


class VerifierConfig(_Strict):
    override_timeout_sec: float | None = None
    max_timeout_sec: float | None = None
    include_logs: list[str] = Field(default_factory=list)
    exclude_logs: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    import_path: str | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    disable: bool = False
    extra_allowed_hosts: list[str] = Field(default_factory=list)


class TaskConfig(_Strict):
    path: Path | None = None
    git_url: str | None = None
    git_commit_id: str | None = None
    name: str | None = None
    ref: str | None = None
    overwrite: bool = False
    download_dir: Path | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _path_or_name(self):
        if (self.path is None) == (self.name is None):
            raise ValueError("a task has a path or a name, not both, not neither")
        if self.ref is not None and self.name is None:
            raise ValueError("'ref' requires 'name'")
        if self.git_commit_id is not None and self.git_url is None:
            raise ValueError("'git_commit_id' requires 'git_url'")
        return self


class TrialConfig(_Strict):
    schema_version: Literal[1] = 1
    task: TaskConfig
    trial_name: str = ""
    trials_dir: Path = Path("trials")
    install_only: bool = False
    timeout_multiplier: float = 1.0
    agent_timeout_multiplier: float | None = None
    verifier_timeout_multiplier: float | None = None
    agent_setup_timeout_multiplier: float | None = None
    environment_build_timeout_multiplier: float | None = None
    agent: AgentConfig = Field(default_factory=AgentConfig)
    user_agent: dict[str, Any] | None = None
    environment: EnvironmentConfig
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    override_error_policy: dict[str, dict[str, bool | None]] = Field(default_factory=dict)
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)
    extra_instruction_paths: list[Path] = Field(default_factory=list)
    extra_instructions: list[str] = Field(default_factory=list)
    job_id: UUID | None = None
    source_trial: dict[str, Any] | None = None


# ---- job config (models/job/config.py) ----


class RetryConfig(_Strict):
    max_retries: int = Field(default=0, ge=0)
    include_exceptions: list[str] | None = None
    exclude_exceptions: list[str] | None = None
    wait_multiplier: float = 1.0
    min_wait_sec: float = 1.0
    max_wait_sec: float = 60.0


class DatasetConfig(_Strict):
    path: Path | None = None
    name: str | None = None
    version: str | None = None
    ref: str | None = None
    registry_url: str | None = None
    registry_path: Path | None = None
    repo: str | None = None
    overwrite: bool = False
    download_dir: Path | None = None
    task_names: list[str] | None = None
    exclude_task_names: list[str] | None = None
    n_tasks: int | None = None

    @model_validator(mode="after")
    def _path_or_name(self):
        if self.repo is None and (self.path is None) == (self.name is None):
            raise ValueError("a dataset has a path or a name, not both, not neither")
        return self


class MetricConfig(_Strict):
    type: Literal["sum", "min", "max", "mean", "uv-script"] = "mean"
    kwargs: dict[str, Any] = Field(default_factory=dict)


class JobConfig(_Strict):
    schema_version: Literal[1] = 1
    job_name: str
    jobs_dir: Path = Path("jobs")
    n_attempts: int = Field(default=1, ge=1)
    install_only: bool = False
    skip_credential_checks: bool = False
    timeout_multiplier: float = 1.0
    agent_timeout_multiplier: float | None = None
    verifier_timeout_multiplier: float | None = None
    agent_setup_timeout_multiplier: float | None = None
    environment_build_timeout_multiplier: float | None = None
    debug: bool = False
    n_concurrent_trials: int = Field(default=4, ge=1)
    quiet: bool = False
    retry: RetryConfig = Field(default_factory=RetryConfig)
    override_error_policy: dict[str, dict[str, bool | None]] = Field(default_factory=dict)
    environment: EnvironmentConfig
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    metrics: list[MetricConfig] = Field(default_factory=list)
    agents: list[AgentConfig] = Field(default_factory=list)
    user_agent: dict[str, Any] | None = None
    datasets: list[DatasetConfig] = Field(default_factory=list)
    tasks: list[TaskConfig] = Field(default_factory=list)
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)
    extra_instruction_paths: list[Path] = Field(default_factory=list)
    extra_instructions: list[str] = Field(default_factory=list)
    source_jobs: list[dict[str, Any]] = Field(default_factory=list)


# ---- trial result (models/trial/result.py, agent/context.py, verifier/result.py) ----


class TimingInfo(_Strict):
    started_at: datetime | None = None
    finished_at: datetime | None = None


class ErrorPolicy(_Strict):
    should_retry: bool
    should_grade: bool
    has_valid_reward: bool


class ExceptionInfo(_Strict):
    exception_type: str
    exception_message: str
    exception_traceback: str
    occurred_at: datetime
    policy_override: dict[str, bool | None] | None = None
    policy: ErrorPolicy | None = None  # computed: Harbor writes it and derives it again on reading


class ModelInfo(_Strict):
    name: str
    provider: str | None = None


class AgentInfo(_Strict):
    name: str
    version: str
    model_info: ModelInfo | None = None


class ModelUsage(_Strict):
    n_input_tokens: int = 0
    n_cache_tokens: int = 0
    n_output_tokens: int = 0
    cost_usd: float | None = None


class AgentContext(_Strict):
    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    model_usage: dict[str, ModelUsage] | None = None
    rollout_details: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None


class VerifierResult(_Strict):
    rewards: dict[str, float | int] | None = None


class LocalTaskId(_Strict):
    path: Path


class StepResult(_Strict):
    step_name: str
    agent_result: AgentContext | None = None
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    agent_execution: TimingInfo | None = None
    verifier: TimingInfo | None = None


class TrialResult(_Strict):
    schema_version: Literal[1] = 1
    id: UUID
    task_name: str
    trial_name: str
    trial_uri: str
    task_id: LocalTaskId
    source: str | None = None
    task_checksum: str
    config: TrialConfig
    agent_info: AgentInfo
    agent_result: AgentContext | None = None
    verifier_result: VerifierResult | None = None
    verifier_environment_mode: Literal["shared", "separate"] | None = None
    exception_info: ExceptionInfo | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    environment_setup: TimingInfo | None = None
    agent_setup: TimingInfo | None = None
    agent_execution: TimingInfo | None = None
    verifier: TimingInfo | None = None
    step_results: list[StepResult] | None = None
    reward_valid: bool | None = None  # computed


# ---- job result (models/job/result.py) ----


class AgentDatasetStats(_Strict):
    n_trials: int = 0
    n_errors: int = 0
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    reward_stats: dict[str, dict[float | int, list[str]]] = Field(default_factory=dict)
    exception_stats: dict[str, list[str]] = Field(default_factory=dict)


class JobStats(_Strict):
    n_completed_trials: int = 0
    n_errored_trials: int = 0
    n_running_trials: int = 0
    n_pending_trials: int = 0
    n_cancelled_trials: int = 0
    n_retries: int = 0
    evals: dict[str, AgentDatasetStats] = Field(default_factory=dict)
    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None


class JobResult(_Strict):
    schema_version: Literal[1] = 1
    id: UUID
    started_at: datetime
    updated_at: datetime | None = None
    finished_at: datetime | None = None
    n_total_trials: int
    stats: JobStats
    trial_results: list[TrialResult] = Field(default_factory=list)


# ---- locks (models/job/lock.py) ----


def _digest(value: str) -> str:
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", value):
        raise ValueError(f"digest must be 'sha256:<64 hex chars>', got {value!r}")
    return value


class TaskLock(_Strict):
    name: str
    version: str | None = None
    type: Literal["local", "git", "package"]
    digest: str
    source: str | None = None
    path: Path | None = None
    git_url: str | None = None
    git_commit_id: str | None = None

    _check = field_validator("digest")(classmethod(lambda cls, v: _digest(v)))


class VerifierLock(VerifierConfig):
    environment_mode: Literal["shared", "separate"] | None = None


class TrialLock(_Strict):
    schema_version: int = 2
    task: TaskLock
    install_only: bool = False
    timeout_multiplier: float = 1.0
    agent_timeout_multiplier: float | None = None
    verifier_timeout_multiplier: float | None = None
    agent_setup_timeout_multiplier: float | None = None
    environment_build_timeout_multiplier: float | None = None
    extra_instructions: list[dict[str, Any]] | None = None
    agent: AgentConfig
    user_agent: dict[str, Any] | None = None
    user_persona: dict[str, Any] | None = None
    user_prompt_template: dict[str, Any] | None = None
    bridge_prompt: dict[str, Any] | None = None
    bridge_inputs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    skills: list[dict[str, Any]] = Field(default_factory=list)
    environment: EnvironmentConfig
    extra_docker_compose: list[dict[str, Any]] | None = None
    verifier: VerifierLock
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)
    override_error_policy: dict[str, dict[str, bool | None]] = Field(default_factory=dict)
    source_trial: dict[str, Any] | None = None


class HarborLockInfo(_Strict):
    version: str | None = None
    git_commit_hash: str | None = None
    is_editable: bool | None = None


class JobLock(_Strict):
    schema_version: int = 3
    created_at: datetime
    harbor: HarborLockInfo = Field(default_factory=HarborLockInfo)
    n_concurrent_trials: int
    retry: RetryConfig
    trials: list[TrialLock] = Field(default_factory=list)


# ---- ATIF (models/trajectories/*.py; Harbor's own ATIF models forbid unknown keys too) ----


class ContentPart(_Strict):
    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: dict[str, Any] | None = None


class ToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class ObservationResult(_Strict):
    source_call_id: str | None = None
    content: str | list[ContentPart] | None = None
    subagent_trajectory_ref: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Strict):
    results: list[ObservationResult]


class Metrics(_Strict):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class Step(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str | list[ContentPart]
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = None
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, v: str | None) -> str | None:
        if v is not None:
            datetime.fromisoformat(v.replace("Z", "+00:00"))
        return v

    @model_validator(mode="after")
    def _agent_only(self):
        if self.source != "agent":
            for name in ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} only on agent steps, not on a {self.source} step")
        return self


class Agent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Strict):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None
    extra: dict[str, Any] | None = None


class Trajectory(_Strict):
    schema_version: Literal[
        "ATIF-v1.0",
        "ATIF-v1.1",
        "ATIF-v1.2",
        "ATIF-v1.3",
        "ATIF-v1.4",
        "ATIF-v1.5",
        "ATIF-v1.6",
        "ATIF-v1.7",
        "ATIF-v1.8",
    ] = "ATIF-v1.8"
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _steps_and_calls(self):
        for i, step in enumerate(self.steps):
            if step.step_id != i + 1:
                raise ValueError(f"steps[{i}].step_id: expected {i + 1}, got {step.step_id}")
            ids = {c.tool_call_id for c in step.tool_calls or []}
            for r in step.observation.results if step.observation else []:
                if r.source_call_id is not None and r.source_call_id not in ids:
                    raise ValueError(
                        f"step {step.step_id}: observation answers {r.source_call_id!r}, not one of its calls"
                    )
        return self


# what each file of a job folder is read as
JOB_FILES = {"config.json": JobConfig, "result.json": JobResult, "lock.json": JobLock}
TRIAL_FILES = {
    "config.json": TrialConfig,
    "result.json": TrialResult,
    "lock.json": TrialLock,
    "agent/trajectory.json": Trajectory,
}


def validate_job_folder(job: Path) -> int:
    """Read every record of a job folder as Harbor's models would; raises on the first that does not fit.
    Returns how many files were read."""
    read = 0
    for name, model in JOB_FILES.items():
        model.model_validate_json((job / name).read_text())
        read += 1
    for folder in sorted(p for p in job.iterdir() if p.is_dir()):
        for name, model in TRIAL_FILES.items():
            if (folder / name).exists():
                try:
                    model.model_validate_json((folder / name).read_text())
                except ValueError as e:
                    raise AssertionError(f"{folder.name}/{name}: {e}") from None
                read += 1
    return read
