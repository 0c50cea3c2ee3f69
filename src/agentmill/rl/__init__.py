"""agentmill tasks as an RL environment: portable rows resolved by task hash, the verifier's reward
for a policy's completion (verl's `compute_score`, TRL's GRPO reward function), and live
multi-turn episodes for agent loops (`LiveEpisode`, verl's interaction interface).

The trainers' frameworks are not imported here: these are plain functions and classes with the
signatures verl and TRL call.
"""

from agentmill.runtime.lazy import lazy_names

# Loaded on first use: `agentmill train --help` (which imports agentmill.rl.cli, and so this
# package) must not pay for the sandbox, agents and rollout machinery these names pull in.
_WHERE = {
    name: f"agentmill.rl.{module}"
    for module, names in {
        "episode": ["Episode", "run_episode"],
        "live": ["AgentmillInteraction", "LiveEpisode", "StepResult"],
        "policy": ["PolicyClient", "PolicyExhausted", "PolicyExhaustedError", "PolicyTurn", "turns_from_completion"],
        "resolve": ["TaskNotFound", "TaskResolver"],
        "reward": [
            "GRPOReward",
            "RewardSettings",
            "Scored",
            "compute_score",
            "compute_score_async",
            "score_completion",
        ],
    }.items()
    for name in names
}

__getattr__, __dir__ = lazy_names(__name__, _WHERE)

__all__ = sorted(_WHERE)
