"""Typed trial outcomes and the verifier's reward files."""

from __future__ import annotations

import json
import math
from enum import Enum

from agentmill.errors import AgentmillError


class Outcome(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    AGENT_ERROR = "agent_error"
    AGENT_TIMEOUT = "agent_timeout"
    VERIFIER_ERROR = "verifier_error"
    VERIFIER_TIMEOUT = "verifier_timeout"
    SANDBOX_ERROR = "sandbox_error"
    INFRA_ERROR = "infra_error"  # the model endpoint failed after its retries
    # the conversation outgrew the model's context (the endpoint said so, or --max-context): the
    # agent's own limit, not the machinery's; the final state is still verified and recorded
    CONTEXT_EXCEEDED = "context_exceeded"
    # the task itself is broken: its environment does not build, its gym or seed fails to set up.
    # Not the agent's fault and not the machinery's: `--retry infra` does not rerun it
    TASK_ERROR = "task_error"
    # every check that ran passed, but the reward also depends on a judged check that did not run
    # (no judge configured: a tool task's response_check, a grounded task's rubric). Never a pass:
    # no reward, left out of pass@k, exports and RL by default; rerun once a judge is set
    UNJUDGED = "unjudged"
    # the task has no verifier (`[verifier] kind = "none"`): the agent finished, nothing scored it
    # (reward null); SFT exports keep it, RL exports refuse it
    UNVERIFIED = "unverified"

    @property
    def is_infra(self) -> bool:
        """Failures of the machinery, not of the agent: what `--retry infra` reruns."""
        return self in (Outcome.SANDBOX_ERROR, Outcome.INFRA_ERROR)

    @property
    def is_agents_failure(self) -> bool:
        """The agent did not solve it, by its own doing (a wrong answer, its crash, its time, its context)."""
        return self in (Outcome.FAILED, Outcome.AGENT_ERROR, Outcome.AGENT_TIMEOUT, Outcome.CONTEXT_EXCEEDED)

    @property
    def is_error(self) -> bool:
        """The trial says nothing of the agent: the machinery, the task or its verifier failed."""
        return self.is_infra or self in (Outcome.TASK_ERROR, Outcome.VERIFIER_ERROR, Outcome.VERIFIER_TIMEOUT)


class RewardError(AgentmillError, ValueError):
    """The verifier wrote no reward, or one that is not a number: the task's (its verifier's) failure."""


PASS_THRESHOLD = 1.0 - 1e-9


def parse_reward(txt: bytes | None, js: bytes | None) -> tuple[float, dict[str, float]]:
    """(scalar reward, named rewards) from reward.txt (a float) or reward.json (a dict of floats).

    The scalar of a dict is its "reward" entry when present, else the mean of its values.
    """
    if txt is not None:
        text = txt.decode("utf-8", "replace").strip()
        try:
            value = float(text)
        except ValueError:
            raise RewardError(f"reward.txt is not a number: {text[:80]!r}") from None
        if not math.isfinite(value):
            raise RewardError(f"reward.txt is not finite: {text[:80]!r}")
        return value, {"reward": value}
    if js is not None:
        try:
            data = json.loads(js.decode("utf-8", "replace"))
        except json.JSONDecodeError as e:
            raise RewardError(f"reward.json is not JSON: {e.msg}") from None
        if not isinstance(data, dict) or not data:
            raise RewardError("reward.json must be a non-empty object of name -> number")
        rewards = {}
        for k, v in data.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise RewardError(f"reward.json: '{k}' is not a finite number: {v!r}")
            rewards[str(k)] = float(v)
        scalar = rewards.get("reward", sum(rewards.values()) / len(rewards))
        return scalar, rewards
    raise RewardError("the verifier wrote no /logs/verifier/reward.txt or reward.json")
