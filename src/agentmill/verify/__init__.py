"""Verification: typed outcomes, reward files, and the test-script verifier."""

from agentmill.verify.outcome import Outcome, RewardError, parse_reward

__all__ = ["Outcome", "RewardError", "parse_reward"]
