"""Summaries of a run folder: outcomes, pass@1 and pass@k with standard errors, tokens, cost, time."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
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


def summarize(run_dir: Path) -> dict:
    """A rollout folder's figures. Pass@k counts only trials the agent actually attempted and the
    verifier fully scored: an infrastructure failure (endpoint, sandbox) is counted apart, never as
    the agent's failure, and so is an unjudged trial (never as a pass)."""
    run_dir = resolve_run_dir(run_dir)
    ledger = Ledger(run_dir / "ledger.sqlite")
    try:
        rows = ledger.rows()
        planned = ledger.planned()
    finally:
        ledger.close()
    done = [r for r in rows if r["state"] == "done"]
    outcomes = Counter(r["outcome"] for r in done)
    attempted = [r for r in done if r["outcome"] not in NOT_SCORED]
    unjudged = sum(r["outcome"] == Outcome.UNJUDGED.value for r in done)
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in attempted:
        if r["outcome"] != Outcome.UNVERIFIED.value:  # a task with no verifier has no pass@k
            by_task[r["task"]].append(r)
    rewards = [r["reward"] for r in done if r["reward"] is not None]
    summary: dict = {
        "run_dir": str(run_dir),
        "planned": planned if planned is not None else len(rows),
        "trials": len(rows),
        "done": len(done),
        "running": len(rows) - len(done),
        "live_pid": live_holder(run_dir),  # a process writing the folder now, else None
        "not_started": max(0, (planned or 0) - len(rows)),
        "attempted": len(attempted),
        "infra_failures": len(done) - len(attempted) - unjudged,
        "unjudged": unjudged,
        "tasks": len({r["task"] for r in rows}),
        "attempted_tasks": len(by_task),
        "outcomes": dict(sorted(outcomes.items())),
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
        "tokens": {
            "prompt": sum(r["prompt_tokens"] or 0 for r in done),
            "completion": sum(r["completion_tokens"] or 0 for r in done),
        },
        "cost_usd": sum(r["cost_usd"] or 0 for r in done) if any(r["cost_usd"] is not None for r in done) else None,
        "trial_seconds": sum(r["seconds"] or 0 for r in done),
        "wall_seconds": (max(r["finished_at"] for r in done) - min(r["started_at"] for r in done)) if done else 0.0,
    }
    if by_task:
        k_max = min(len(v) for v in by_task.values())
        passes = {task: (len(v), sum(r["outcome"] == "passed" for r in v)) for task, v in by_task.items()}
        summary["pass_at_k"] = {}
        for k in sorted({1, k_max} | ({2, 4, 8, 16} & set(range(1, k_max + 1)))):
            m, se = mean_se([pass_at_k(n, c, k) for n, c in passes.values()])
            summary["pass_at_k"][str(k)] = {"mean": m, "se": se}
    telemetries = []
    for r in done:
        path = run_dir / "trials" / r["trial_id"] / "telemetry.json"
        if path.exists():
            telemetries.append(Telemetry.model_validate_json(path.read_text()))
    summary["telemetry"] = aggregate(telemetries)
    summary["trial_list"] = [
        {
            "trial_id": r["trial_id"],
            "task": r["task"],
            "attempt": r["attempt"],
            "state": r["state"],
            "outcome": r["outcome"],
            "reward": r["reward"],
        }
        for r in rows
    ]
    return summary
