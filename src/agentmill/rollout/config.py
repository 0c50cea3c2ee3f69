"""A rollout's configuration, saved in the run folder. Identity fields decide which trials exist;
the rest (where the dataset lives, endpoint URL, key variable, concurrency) may change between resumes.
Which tasks a run holds is per-task state: the ledger keeps it (rollout/task_record.py), not the config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentmill import defaults
from agentmill.models.client import Prices, SamplingParams
from agentmill.rollout.network import DEFAULT_NETWORK, NetworkMode


class RolloutConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str  # resolved dataset folder: recorded, not identity (a moved dataset resumes)
    # identity (with each task's content hash, which the ledger records)
    agent: str
    agent_version: str
    model: str | None = None
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    max_turns: int = defaults.MAX_TURNS
    max_context: int | None = Field(None, gt=0)  # tokens; None: the endpoint's own limit
    attempts: int = Field(defaults.ATTEMPTS, ge=1)
    # the agents' network (rollout/network.py): a run folder made before it existed reads "task",
    # and its trials, all made without a network, keep their ids unless their task allows the internet
    network: NetworkMode = DEFAULT_NETWORK
    # operational
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = Field(defaults.CONCURRENCY, ge=1)
    model_concurrency: int = Field(defaults.MODEL_CONCURRENCY, ge=1)
    request_timeout: float = defaults.REQUEST_TIMEOUT
    max_retries: int = defaults.MAX_RETRIES
    prices: Prices | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_task_hashes(cls, data):
        """`task_hashes`, which configs (and scripts) made before the ledger kept them carry, is let
        go: the ledger records each task's hash as it is planned (`read_run_config` migrates a run
        folder's)."""
        if isinstance(data, dict) and LEGACY_TASKS in data:
            data = {k: v for k, v in data.items() if k != LEGACY_TASKS}
        return data

    IDENTITY: ClassVar[tuple[str, ...]] = (
        "agent",
        "agent_version",
        "model",
        "sampling",
        "max_turns",
        "max_context",
        "network",
    )

    def identity_changes(self, old: RolloutConfig) -> list[str]:
        """The settings that changed and would make different trials; empty if they allow resuming.
        (Edited tasks are found from the ledger's record: rollout/task_record.py.)"""
        changes = []
        for name in self.IDENTITY:
            a, b = getattr(old, name), getattr(self, name)
            if a == b or (name in ("sampling", "max_turns", "max_context") and not (old.model or self.model)):
                continue  # model settings make no difference to trials without a model
            if name == "sampling":
                diffs = [
                    f"{k} {getattr(a, k)!r} -> {getattr(b, k)!r}"
                    for k in type(a).model_fields
                    if getattr(a, k) != getattr(b, k)
                ]
                changes.append("sampling: " + ", ".join(diffs))
            else:
                changes.append(f"{name}: {a!r} -> {b!r}")
        return changes


LEGACY_TASKS = "task_hashes"  # config.json's record of every task's hash, before the ledger kept it


def read_run_config(path: Path) -> tuple[RolloutConfig, dict[str, str]]:
    """A run folder's config.json, and the task hashes an older one recorded in it ({} if none: the
    ledger holds them). Raises ValueError when it does not read as a RolloutConfig."""
    raw = json.loads(path.read_text())
    legacy = raw.pop(LEGACY_TASKS, None) if isinstance(raw, dict) else None
    return RolloutConfig.model_validate(raw), dict(legacy or {})
