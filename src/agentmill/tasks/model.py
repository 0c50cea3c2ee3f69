"""The task record: a Harbor task directory's configuration and where its parts live.

One schema, defined once. Harbor's `task.toml` keys map one-to-one onto `TaskConfig`; a legacy
Terminal-Bench task is read into the same record (see `terminal_bench.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentmill.tasks.tool_spec import ToolSpec

DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_VERIFIER_TIMEOUT = 600.0


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class AgentSection(_Section):
    timeout_sec: float = Field(DEFAULT_AGENT_TIMEOUT, gt=0)


class VerifierSection(_Section):
    # "none": an unverified task (a Q&A source's, trained on by SFT): no tests/, reward null
    kind: Literal["tests", "none"] = "tests"
    timeout_sec: float = Field(DEFAULT_VERIFIER_TIMEOUT, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class SolutionSection(_Section):
    env: dict[str, str] = Field(default_factory=dict)


class EnvironmentSection(_Section):
    build_timeout_sec: float = Field(600.0, gt=0)
    docker_image: str = ""
    cpus: float = Field(1, gt=0)
    memory_mb: int = Field(2048, gt=0)
    storage_mb: int = Field(10240, gt=0)
    gpus: int = Field(0, ge=0)
    # The agent's internet (rollout/network.py). Unset: none, unlike Harbor's default (on): an agent
    # with the internet can look its answers up, and its trial depends on the outside world.
    allow_internet: bool = False
    # Tool tasks (kind = "tools"): the gyms they use and how their tools are exposed.
    kind: str = "terminal"  # a registered task kind: "terminal" or "tools"
    gyms: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)  # the tools the agent sees (empty: all)
    restricted_tools: list[str] = Field(default_factory=list)
    tool_timeout_sec: float = Field(30.0, gt=0)


class TaskConfig(_Section):
    """`task.toml`, Harbor's schema. `metadata` is free-form by design."""

    version: str = "1.0"
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: AgentSection = Field(default_factory=AgentSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    solution: SolutionSection = Field(default_factory=SolutionSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)


class Task(BaseModel):
    """A task as loaded from disk. Paths are absolute; `content_hash` covers every file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    path: Path
    format: Literal["harbor", "terminal-bench"]
    instruction: str
    config: TaskConfig
    content_hash: str
    environment_dir: Path | None  # build context: environment/ (Harbor) or the task root (legacy)
    dockerfile: Path | None
    # Staged into /tests for the verifier only: directories contribute their contents, files themselves.
    tests_sources: tuple[Path, ...]
    test_script: str  # run as `bash /tests/<test_script>`
    # Staged into /solution for the oracle only.
    solution_sources: tuple[Path, ...] = ()
    solution_script: str | None = None
    warnings: tuple[str, ...] = ()
    kind: str = "terminal"  # a registered task kind (tasks/kinds.py)
    system: str | None = None  # system.md: the system specification (tool tasks)
    tool_spec: ToolSpec | None = None  # gyms, verifiers, reference calls (tool tasks)

    @property
    def verified(self) -> bool:
        """False for a task with `[verifier] kind = "none"`: it rolls out, but nothing scores it."""
        return self.config.verifier.kind != "none"

    @property
    def short_hash(self) -> str:
        return self.content_hash[:12]
