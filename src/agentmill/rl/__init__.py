"""agentmill tasks as an RL environment: portable rows resolved by task hash, the verifier's reward
for a policy's completion (verl's `compute_score`, TRL's GRPO reward function), and live
multi-turn episodes for agent loops (`LiveEpisode`, verl's interaction interface).

The trainers' frameworks are not imported here: these are plain functions and classes with the
signatures verl and TRL call.
"""

from agentmill.rl.episode import Episode, run_episode
from agentmill.rl.live import AgentmillInteraction, LiveEpisode, StepResult
from agentmill.rl.policy import PolicyClient, PolicyExhausted, PolicyTurn, turns_from_completion
from agentmill.rl.resolve import TaskNotFound, TaskResolver
from agentmill.rl.reward import GRPOReward, RewardSettings, Scored, compute_score, compute_score_async, score_completion

__all__ = ["AgentmillInteraction", "Episode", "GRPOReward", "LiveEpisode", "PolicyClient", "PolicyExhausted", "PolicyTurn",
           "RewardSettings", "Scored", "StepResult", "TaskNotFound", "TaskResolver", "compute_score", "compute_score_async",
           "run_episode", "score_completion", "turns_from_completion"]
