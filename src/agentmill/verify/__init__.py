"""Verification: typed outcomes, reward files, tamper evidence, and the test-script verifier."""

from agentmill.verify.outcome import Outcome, RewardError, parse_reward
from agentmill.verify.tamper import Tamper, TamperKind

__all__ = ["Outcome", "RewardError", "Tamper", "TamperKind", "parse_reward"]
