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
) -> dict:
    """The agent-and-model part of a trial's identity. Model settings count only when a model is used."""
    ident = {
        "agent": agent,
        "agent_version": agent_version,
        "model": model,
        "max_turns": max_turns if model else None,
        "sampling": sampling.model_dump() if model else None,
    }
    if max_context is not None and model:  # only when set: trials made without it keep their identity
        ident["max_context"] = max_context
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
    )


def trial_id(config, task_hash: str, attempt: int) -> str:
    payload = {**config_identity(config), "task_hash": task_hash, "attempt": attempt}
    return hash_text(json.dumps(payload, sort_keys=True))[:24]
