"""A rollout's configuration, saved in the run folder. Identity fields decide which trials exist;
the rest (where the dataset lives, endpoint URL, key variable, concurrency) may change between resumes."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentmill import defaults
from agentmill.models.client import Prices, SamplingParams
from agentmill.rollout.network import DEFAULT_NETWORK, NetworkMode


class RolloutConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str  # resolved dataset folder: recorded, not identity (a moved dataset resumes)
    # identity
    task_hashes: dict[str, str]  # task name -> content hash
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

    IDENTITY: ClassVar[tuple[str, ...]] = (
        "task_hashes",
        "agent",
        "agent_version",
        "model",
        "sampling",
        "max_turns",
        "max_context",
        "network",
    )

    def identity_changes(self, old: RolloutConfig) -> list[str]:
        """What changed that would make different trials; empty if resuming is safe."""
        changes = []
        for name in self.IDENTITY:
            a, b = getattr(old, name), getattr(self, name)
            if a == b or (name in ("sampling", "max_turns", "max_context") and not (old.model or self.model)):
                continue  # model settings make no difference to trials without a model
            if name == "task_hashes":
                # runs grow: tasks added (or left out) change the plan, as --attempts does; an edited
                # task (same name, other content) is refused, its finished trials judged another task
                changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
                if not changed:
                    continue
                shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
                changes.append(f"tasks: {len(changed)} edited since the run began ({shown})")
            elif name == "sampling":
                diffs = [
                    f"{k} {getattr(a, k)!r} -> {getattr(b, k)!r}"
                    for k in type(a).model_fields
                    if getattr(a, k) != getattr(b, k)
                ]
                changes.append("sampling: " + ", ".join(diffs))
            else:
                changes.append(f"{name}: {a!r} -> {b!r}")
        return changes
