"""Trial identity, defined once: hash of task hash, agent name + version (+ settings), model name,
sampling parameters and attempt index. Never the endpoint URL, port or key (a resume against a
restarted server on another port finds its finished trials), and never where the dataset lives
(a moved dataset resumes; changed task content does not).

Everything that records or compares "which trials these settings make" (the trial id, trial.json,
the trajectory's agent info, the recipe's rollout stage key) reads `settings_identity`.
"""

from __future__ import annotations

import json

from agentmill.models.client import SamplingParams
from agentmill.tasks.hashing import hash_text


def settings_identity(
    *,
    agent: str,
    agent_version: str,
    model: str | None,
    sampling: SamplingParams,
    max_turns: int,
    max_context: int | None = None,
    network: str = "task",
) -> dict:
    """The agent-and-model part of a trial's identity. Model settings count only when a model is used.
    `network` (rollout/network.py) counts only when it is not the default, so settings made before
    it existed keep their identity."""
    ident = {
        "agent": agent,
        "agent_version": agent_version,
        "model": model,
        "max_turns": max_turns if model else None,
        "sampling": sampling.model_dump() if model else None,
    }
    if max_context is not None and model:  # only when set: trials made without it keep their identity
        ident["max_context"] = max_context
    if network != "task":
        ident["network"] = network
    return ident


def config_identity(config) -> dict:
    """`settings_identity` of a RolloutConfig."""
    return settings_identity(
        agent=config.agent,
        agent_version=config.agent_version,
        model=config.model,
        sampling=config.sampling,
        max_turns=config.max_turns,
        max_context=config.max_context,
        network=config.network,
    )


def trial_id(config, task_hash: str, attempt: int, *, internet: bool = False) -> str:
    """`internet`: whether this trial's agent has the internet (rollout/network.py). What the trial
    really had counts, not the switch: under `--network none` a task that never asked for the
    network makes the same trial as under `task`, and a trial without the internet (every trial made
    before it existed) keeps its id."""
    ident = config_identity(config)
    ident.pop("network", None)
    payload = {**ident, "task_hash": task_hash, "attempt": attempt}
    if internet:
        payload["internet"] = True
    return hash_text(json.dumps(payload, sort_keys=True))[:24]
