"""The trial result record: one agent attempt at one task, verified."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentmill.verify.outcome import Outcome
from agentmill.verify.tamper import Tamper


class Timings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    environment: float = 0.0  # image build or cache hit
    sandbox_start: float = 0.0
    agent: float = 0.0
    verifier: float = 0.0
    total: float = 0.0


class TrialResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trial_id: str | None = None
    attempt: int = 0
    model: str | None = None
    task: str
    task_hash: str
    agent: str
    agent_version: str
    outcome: Outcome
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    exception: str | None = None
    verifier_stdout: str = ""
    verifier_stderr: str = ""
    build_log: str = ""  # the failing build step's last output, when the environment did not build
    notes: list[str] = Field(default_factory=list)
    timings: Timings = Field(default_factory=Timings)
    tokens: dict[str, int] = Field(default_factory=lambda: {"prompt": 0, "completion": 0})
    cost_usd: float | None = None
    agent_metadata: dict = Field(default_factory=dict)
    tamper: list[Tamper] = Field(default_factory=list)  # what the verifier neutralised: kind, path, detail
    # the agent's sandbox had the internet (public addresses only: rollout/network.py); never the verifier's
    internet: bool = False

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED
