"""Trial identity: hash of task hash, agent name + version (+ settings), model name, sampling
parameters and attempt index. Never the endpoint URL, port or key, so a resume against a
restarted server on another port finds its finished trials."""

from __future__ import annotations

import json

from agentmill.rollout.config import RolloutConfig
from agentmill.tasks.hashing import hash_text


def trial_id(config: RolloutConfig, task_hash: str, attempt: int) -> str:
    payload = {
        "task_hash": task_hash,
        "agent": config.agent,
        "agent_version": config.agent_version,
        "max_turns": config.max_turns if config.model else None,
        "model": config.model,
        "sampling": config.sampling.model_dump() if config.model else None,
        "attempt": attempt,
    }
    return hash_text(json.dumps(payload, sort_keys=True))[:24]
