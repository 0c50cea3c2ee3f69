"""The solver ballot: the target model must solve the task at most `target_max_solves` of k times
(it is still hard for the target) and the stronger solver at least `solver_min_solves` of k (it is
solvable, so the teacher can demonstrate it). Both run as real rollouts of the `tools` agent, each in
its own run folder under the attempt's work folder (ledger, trials, trajectories: resumable, inspectable).

Early stop: trials run in waves, each wave as many trials as can run before the role's verdict could
possibly be known (so parallel trials never outrun a decision). Once the target has solved more than
allowed (too easy) or the solver has failed more than allowed (too hard), no further trial of either
role starts. The trials that ran are recorded (`target_trials`, `solver_trials`, `stopped_early`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from agentmill.agents.tools import ToolsAgent
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.runner import run_rollout
from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.synth.gates.completeness import solver_paths
from agentmill.verify.outcome import Outcome


@dataclass
class Tally:
    """One role's ballot so far. `high` = passes that decide it (target: too easy; solver: solvable),
    `low` = failures that decide it the other way. high + low = k + 1, so k trials always decide."""

    role: str
    high: int
    low: int
    passes: int = 0
    fails: int = 0
    infra: int = 0
    outcomes: list[str] = field(default_factory=list)

    @property
    def trials(self) -> int:
        return self.passes + self.fails

    @property
    def verdict(self) -> str | None:
        if self.passes >= self.high:
            return "high"
        if self.fails >= self.low:
            return "low"
        return None

    def wave(self) -> int:
        """Trials to start now: never one that could finish after the verdict is already known."""
        return max(1, min(self.high - self.passes, self.low - self.fails))


def target_tally(k: int, target_max: int) -> Tally:
    return Tally("target", high=target_max + 1, low=k - target_max)


def solver_tally(k: int, solver_min: int) -> Tally:
    return Tally("solver", high=solver_min, low=k - solver_min + 1)


def _rollout_config(ctx: GateContext, role: str, attempts: int) -> RolloutConfig:
    b, client = ctx.settings.ballot, ctx.clients[role]
    return RolloutConfig(
        dataset=str(ctx.task_dir.parent),
        agent=ToolsAgent.name,
        agent_version=ToolsAgent.version,
        model=client.model,
        sampling=client.sampling,
        max_turns=b.max_turns,
        attempts=attempts,
        base_url=client.base_url,
        concurrency=b.concurrency,
    )


def _read(tally: Tally, ctx: GateContext) -> None:
    """Recount the role's finished trials from its run folder's ledger."""
    path = ctx.work_dir / f"ballot-{tally.role}" / "ledger.sqlite"
    if not path.is_file():
        return
    ledger = Ledger(path)
    try:
        outcomes = [Outcome(r["outcome"]) for r in ledger.rows() if r["state"] == "done"]
    finally:
        ledger.close()
    tally.infra = sum(o.is_infra for o in outcomes)
    tally.passes = sum(o is Outcome.PASSED for o in outcomes)
    tally.fails = len(outcomes) - tally.passes - tally.infra
    tally.outcomes = [o.value for o in outcomes]


async def _run_wave(ctx: GateContext, tally: Tally) -> None:
    """Raise the role's attempts by one wave: the run folder resumes, so only the new attempts run
    (and, after an outage pause, the trials that ended in infrastructure errors run again)."""
    attempts = tally.trials + tally.wave()
    await run_rollout(
        _rollout_config(ctx, tally.role, attempts),
        [ctx.task],
        ctx.work_dir / f"ballot-{tally.role}",
        client=ctx.clients[tally.role],
        retry_infra=True,
    )
    _read(tally, ctx)


class BallotGate:
    name = "ballot"

    async def run(self, ctx: GateContext) -> GateResult:
        b = ctx.settings.ballot
        target, solver = target_tally(b.k, b.target_max_solves), solver_tally(b.k, b.solver_min_solves)
        for t in (target, solver):
            _read(t, ctx)
            t.infra = 0  # a rerun after an outage: those trials run again
        while target.verdict != "high" and solver.verdict != "low":
            pending = [t for t in (target, solver) if t.verdict is None]
            if not pending:
                break
            await asyncio.gather(*(_run_wave(ctx, t) for t in pending))
            if target.infra or solver.infra:
                break
        details = {
            "k": b.k,
            "target_solves": target.passes,
            "solver_solves": solver.passes,
            "target_trials": target.trials,
            "solver_trials": solver.trials,
            "target_outcomes": target.outcomes,
            "solver_outcomes": solver.outcomes,
            "stopped_early": target.trials + solver.trials < 2 * b.k,
            **solver_paths(ctx.work_dir / "ballot-solver", ctx.candidate.body.calls),
        }
        if target.infra or solver.infra:
            return GateResult(
                gate=self.name,
                passed=False,
                code="ballot_infra",
                fault="infra",
                details=details,
                message=f"{target.infra + solver.infra} ballot trials failed for infrastructure reasons",
            )
        if target.verdict == "high":
            return GateResult(
                gate=self.name,
                passed=False,
                code="too_easy",
                category="capability_mismatch",
                components=["prompt", "seed_sql", "calls", "verifiers"],
                details=details,
                message=f"the target solved {target.passes} of {target.trials} trials "
                f"(at most {b.target_max_solves} of {b.k} allowed)",
            )
        if solver.verdict == "low":
            return GateResult(
                gate=self.name,
                passed=False,
                code="too_hard",
                category="impossible_workflow",
                components=["prompt", "system"],
                details=details,
                message=f"the solver solved {solver.passes} of {solver.trials} trials "
                f"(at least {b.solver_min_solves} of {b.k} needed)",
            )
        return GateResult(gate=self.name, passed=True, code="ok", details=details)
