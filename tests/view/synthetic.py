"""A large synthetic run: ledger rows only (no trial folders), written straight into a real ledger."""

from __future__ import annotations

import random
from pathlib import Path

from agentmill.rollout.ledger import Ledger

OUTCOMES = ("passed", "failed", "agent_timeout", "infra_error")


def synthetic_ledger(run: Path, n: int, *, tasks: int = 1000, seed: int = 0) -> dict[str, int]:
    """`n` finished trials over `tasks` tasks in run/ledger.sqlite; returns the count per outcome."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "trials").mkdir(exist_ok=True)
    rng = random.Random(seed)
    ledger = Ledger(run / "ledger.sqlite")
    counts = dict.fromkeys(OUTCOMES, 0)
    rows = []
    for i in range(n):
        outcome = OUTCOMES[rng.randrange(len(OUTCOMES))]
        counts[outcome] += 1
        task = f"task-{i % tasks:05d}"
        rows.append(
            (
                f"t{i:07d}",
                task,
                f"h{i % tasks}",
                i // tasks,
                "done",
                outcome,
                float(outcome == "passed"),
                rng.randint(100, 90_000),
                rng.randint(10, 9_000),
                rng.random() * 100,
                1000.0 + i,
                1000.5 + i,
            )
        )
    with ledger.db:
        ledger.db.execute("BEGIN")
        ledger.db.executemany(
            "INSERT INTO trials (trial_id, task, task_hash, attempt, state, outcome, reward, prompt_tokens, "
            "completion_tokens, seconds, started_at, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
    ledger.close()
    return counts
