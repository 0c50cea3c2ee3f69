"""The solver ballot: the target model must solve the task at most `target_max_solves` of k times
(it is still hard for the target) and the stronger solver at least `solver_min_solves` of k (it is
solvable, so the teacher can demonstrate it). Both run as real rollouts of the `tools` agent, each in
its own run folder under the attempt's work folder (ledger, trials, trajectories: resumable, inspectable)."""

from __future__ import annotations

import asyncio

from agentmill.agents.tools import ToolsAgent
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.runner import run_rollout
from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.verify.outcome import Outcome


async def _solves(ctx: GateContext, role: str) -> tuple[int, int, list[str]]:
    """(passes, infra failures, outcomes) of k tools-agent trials of the role's model. A rerun (after an
    outage pause) resumes the same run folder: finished trials stay, infra failures run again."""
    b = ctx.settings.ballot
    client = ctx.clients[role]
    config = RolloutConfig(dataset=str(ctx.task_dir.parent), task_hashes={ctx.task.name: ctx.task.content_hash},
                           agent=ToolsAgent.name, agent_version=ToolsAgent.version, model=client.model,
                           sampling=client.sampling, max_turns=b.max_turns, attempts=b.k, base_url=client.base_url,
                           concurrency=b.concurrency)
    run_dir = ctx.work_dir / f"ballot-{role}"
    await run_rollout(config, [ctx.task], run_dir, client=client, retry_infra=True)
    ledger = Ledger(run_dir / "ledger.sqlite")
    try:
        outcomes = [Outcome(r["outcome"]) for r in ledger.rows() if r["state"] == "done"]
    finally:
        ledger.close()
    return (sum(o is Outcome.PASSED for o in outcomes), sum(o.is_infra for o in outcomes), [o.value for o in outcomes])


class BallotGate:
    name = "ballot"

    async def run(self, ctx: GateContext) -> GateResult:
        b = ctx.settings.ballot
        (t_pass, t_infra, t_out), (s_pass, s_infra, s_out) = await asyncio.gather(_solves(ctx, "target"),
                                                                                  _solves(ctx, "solver"))
        details = {"k": b.k, "target_solves": t_pass, "solver_solves": s_pass, "target_outcomes": t_out,
                   "solver_outcomes": s_out}
        if t_infra or s_infra:
            return GateResult(gate=self.name, passed=False, code="ballot_infra", fault="infra", details=details,
                              message=f"{t_infra + s_infra} ballot trials failed for infrastructure reasons")
        if t_pass > b.target_max_solves:
            return GateResult(gate=self.name, passed=False, code="too_easy", category="capability_mismatch",
                              components=["prompt", "seed_sql", "calls", "verifiers"], details=details,
                              message=f"the target solved {t_pass}/{b.k} (at most {b.target_max_solves} allowed)")
        if s_pass < b.solver_min_solves:
            return GateResult(gate=self.name, passed=False, code="too_hard", category="impossible_workflow",
                              components=["prompt", "system"], details=details,
                              message=f"the solver solved {s_pass}/{b.k} (at least {b.solver_min_solves} needed)")
        return GateResult(gate=self.name, passed=True, code="ok", details=details)
