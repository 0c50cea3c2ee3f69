"""Rollouts: running agents on tasks, one verified trial at a time or many at once."""

from agentmill.rollout.result import Timings, TrialResult
from agentmill.rollout.trial import run_trial

__all__ = ["Timings", "TrialResult", "run_trial"]
