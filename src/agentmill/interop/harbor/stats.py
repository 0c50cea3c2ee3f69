"""A Harbor job's result.json `stats`, tallied one trial at a time as Harbor tallies them.

harbor: models/job/result.py (JobStats.increment, AgentDatasetStats), metrics/base.py with metrics/mean.py
(the default metric), utils/pass_at_k.py. Per `<agent>__<model>__<dataset>`: `n_trials` counts the trials
whose reward is valid (a reward, and no exception that voids it), `n_errors` those that raised; the mean
is over valid rewards only; pass@k (k = 2, 4, 8, ... and 5, 10, ... up to the fewest trials of a task) only
when every valid reward is a single 0 or 1. Job-wide: every trial written is completed (none running or
pending), errored and cancelled counts, and token and cost totals.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Eval:
    n_trials: int = 0
    n_errors: int = 0
    rewards: list[dict[str, float]] = field(default_factory=list)  # the valid ones, for the mean
    reward_stats: dict[str, dict[float, list[str]]] = field(default_factory=dict)
    exception_stats: dict[str, list[str]] = field(default_factory=dict)
    successes: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # task -> valid rewards
    binary: bool = True  # every valid reward one 0/1 value: pass@k applies


@dataclass
class JobTally:
    n_completed: int = 0
    n_errored: int = 0
    n_cancelled: int = 0
    tokens: dict[str, int | float | None] = field(
        default_factory=lambda: {
            "n_input_tokens": None,
            "n_cache_tokens": None,
            "n_output_tokens": None,
            "cost_usd": None,
        }
    )
    evals: dict[str, _Eval] = field(default_factory=dict)

    def add(
        self,
        key: str,
        *,
        trial_name: str,
        task: str,
        rewards: dict[str, float],
        reward_valid: bool,
        exception_type: str | None,
        tokens: dict[str, int | float | None],
    ) -> None:
        self.n_completed += 1
        e = self.evals.setdefault(key, _Eval())
        if reward_valid and rewards:
            e.n_trials += 1
            e.rewards.append(rewards)
            for name, value in rewards.items():
                e.reward_stats.setdefault(name, {}).setdefault(value, []).append(trial_name)
            value = next(iter(rewards.values()))
            e.binary = e.binary and len(rewards) == 1 and value in (0, 1)
            e.successes[task].append(value)
        if exception_type:
            e.exception_stats.setdefault(exception_type, []).append(trial_name)
            e.n_errors += 1
            self.n_errored += 1
            self.n_cancelled += exception_type == "CancelledError"
        for name, count in tokens.items():
            if count is not None:
                self.tokens[name] = (self.tokens[name] or 0) + count

    def stats(self) -> dict[str, Any]:
        return {
            "n_completed_trials": self.n_completed,
            "n_errored_trials": self.n_errored,
            "n_running_trials": 0,
            "n_pending_trials": 0,
            "n_cancelled_trials": self.n_cancelled,
            "n_retries": 0,
            "evals": {key: _eval_stats(e) for key, e in self.evals.items()},
            **self.tokens,
        }


def _eval_stats(e: _Eval) -> dict[str, Any]:
    return {
        "n_trials": e.n_trials,
        "n_errors": e.n_errors,
        "metrics": [mean_metric(e.rewards)] if e.rewards else [],
        "pass_at_k": pass_at_k(e.successes) if e.binary else {},
        "reward_stats": {
            name: {_key(v): names for v, names in by_value.items()} for name, by_value in e.reward_stats.items()
        },
        "exception_stats": e.exception_stats,
    }


def _key(value: float) -> str:
    """A reward as a JSON object key, as pydantic writes a float or int key."""
    return str(int(value)) if isinstance(value, int) else repr(float(value))


def mean_metric(rewards: list[dict[str, float]]) -> dict[str, float]:
    """Harbor's default metric: one reward name -> {"mean": ...}; several -> the mean of each (missing counts 0)."""
    names = sorted({name for r in rewards for name in r})
    if len(names) <= 1:
        values = [next(iter(r.values()), 0) for r in rewards]
        return {"mean": sum(values) / len(values)}
    return {name: sum(r.get(name, 0) for r in rewards) / len(rewards) for name in names}


def pass_at_k(successes: dict[str, list[float]]) -> dict[str, float]:
    """Mean over tasks of the unbiased pass@k estimator, for Harbor's k values up to the fewest trials of a task."""
    if not successes:
        return {}
    fewest = min(len(v) for v in successes.values())
    ks = sorted({*(2**i for i in range(1, fewest.bit_length()) if 2**i <= fewest), *range(5, fewest + 1, 5)})
    return {str(k): sum(_estimate(len(v), int(sum(v)), k) for v in successes.values()) / len(successes) for k in ks}


def _estimate(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(k):
        product *= (n - c - i) / (n - i)
    return 1.0 - product
