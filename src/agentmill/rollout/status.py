"""Summaries of a run folder: outcomes, pass@1 and pass@k with standard errors, tokens, cost, time."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from agentmill.rollout.folder import resolve_run_dir
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.lock import live_holder
from agentmill.traces.telemetry import Telemetry, aggregate
from agentmill.verify.outcome import Outcome


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task with n attempts of which c passed (Chen et al., 2021)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} attempts per task, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n))."""
    if not values:
        return float("nan"), float("nan")
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (len(values) - 1)
    return m, math.sqrt(var / len(values))


INFRA = frozenset(o.value for o in Outcome if o.is_infra)
# counted apart from pass@k and the mean reward: the machinery failed, or a judged check never ran
# (unjudged: neither a pass nor a failure is known)
NOT_SCORED = INFRA | {Outcome.UNJUDGED.value}


def summarize(run_dir: Path, *, trials: bool = True) -> dict:
    """A rollout folder's figures. Pass@k counts only trials the agent actually attempted and the
    verifier fully scored: an infrastructure failure (endpoint, sandbox) is counted apart, never as
    the agent's failure, and so is an unjudged trial (never as a pass). Rows are read one at a time
    (a large run is never held whole); `trials`: also list every trial (`trial_list`)."""
    run_dir = resolve_run_dir(run_dir)
    ledger = Ledger(run_dir / "ledger.sqlite")
    try:
        planned = ledger.planned()
        fold = _Fold(run_dir, trials)
        for r in ledger.iter_rows():
            fold.add(r)
        per_task = _per_task_passes(ledger)
        tasks = ledger.db.execute("SELECT COUNT(DISTINCT task) FROM trials").fetchone()[0]
        telemetry = aggregate(_telemetries(run_dir, ledger))
    finally:
        ledger.close()
    summary: dict = {
        "run_dir": str(run_dir),
        "planned": planned if planned is not None else fold.rows,
        "trials": fold.rows,
        "done": fold.done,
        "running": fold.rows - fold.done,
        "live_pid": live_holder(run_dir),  # a process writing the folder now, else None
        "not_started": max(0, (planned or 0) - fold.rows),
        "attempted": fold.attempted,
        "infra_failures": fold.done - fold.attempted - fold.unjudged,
        "unjudged": fold.unjudged,
        "tasks": tasks,
        "attempted_tasks": len(per_task),
        "outcomes": dict(sorted(fold.outcomes.items())),
        "mean_reward": fold.reward_sum / fold.rewarded if fold.rewarded else None,
        "tokens": {"prompt": fold.prompt, "completion": fold.completion},
        "cost_usd": fold.cost if fold.costed else None,
        "trial_seconds": fold.seconds,
        "wall_seconds": (fold.last_finish - fold.first_start) if fold.done else 0.0,
    }
    if per_task:
        k_max = min(n for n, _ in per_task)
        summary["pass_at_k"] = {}
        for k in sorted({1, k_max} | ({2, 4, 8, 16} & set(range(1, k_max + 1)))):
            m, se = mean_se([pass_at_k(n, c, k) for n, c in per_task])
            summary["pass_at_k"][str(k)] = {"mean": m, "se": se}
    summary["telemetry"] = telemetry
    if trials:
        summary["trial_list"] = fold.trial_list
    return summary


class _Fold:
    """The run's figures, folded one ledger row at a time."""

    def __init__(self, run_dir: Path, trials: bool):
        self.rows = self.done = self.attempted = self.unjudged = self.rewarded = 0
        self.prompt = self.completion = 0
        self.reward_sum = self.cost = self.seconds = 0.0
        self.costed = False
        self.first_start, self.last_finish = math.inf, -math.inf
        self.outcomes: Counter[str] = Counter()
        self.trial_list: list[dict] | None = [] if trials else None

    def add(self, r: dict) -> None:
        self.rows += 1
        if self.trial_list is not None:
            keep = ("trial_id", "task", "attempt", "state", "outcome", "reward")
            self.trial_list.append({k: r[k] for k in keep})
        if r["state"] != "done":
            return
        self.done += 1
        self.outcomes[r["outcome"]] += 1
        self.attempted += r["outcome"] not in NOT_SCORED
        self.unjudged += r["outcome"] == Outcome.UNJUDGED.value
        if r["reward"] is not None:
            self.reward_sum += r["reward"]
            self.rewarded += 1
        self.prompt += r["prompt_tokens"] or 0
        self.completion += r["completion_tokens"] or 0
        self.costed = self.costed or r["cost_usd"] is not None
        self.cost += r["cost_usd"] or 0
        self.seconds += r["seconds"] or 0
        self.first_start = min(self.first_start, r["started_at"])
        self.last_finish = max(self.last_finish, r["finished_at"])


def _per_task_passes(ledger: Ledger) -> list[tuple[int, int]]:
    """(attempts, passes) of each task with a scored attempt (a task with no verifier has no pass@k)."""
    skip = sorted(NOT_SCORED | {Outcome.UNVERIFIED.value})
    marks = ",".join("?" * len(skip))
    sql = (
        "SELECT COUNT(*), SUM(outcome = 'passed') FROM trials "
        f"WHERE state='done' AND outcome NOT IN ({marks}) GROUP BY task ORDER BY task"
    )
    return [(n, c) for n, c in ledger.db.execute(sql, skip)]


def _telemetries(run_dir: Path, ledger: Ledger) -> Iterator[Telemetry]:
    """Each finished trial's telemetry.json, read one at a time."""
    for (trial_id,) in ledger.db.execute("SELECT trial_id FROM trials WHERE state='done' ORDER BY task, attempt"):
        path = run_dir / "trials" / trial_id / "telemetry.json"
        if path.exists():
            yield Telemetry.model_validate_json(path.read_text())
