"""Positive verification: the reference calls, replayed by the oracle in a real trial, leave a state
every verifier accepts, and no reference call errors on the way (check's replay lint, here a gate)."""

from __future__ import annotations

from agentmill.agents import OracleAgent
from agentmill.agents.base import AgentResult
from agentmill.rollout.trial import run_trial
from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.verify.outcome import Outcome


class PositiveVerification:
    name = "positive"

    async def run(self, ctx: GateContext) -> GateResult:
        ar = AgentResult()
        result = await run_trial(ctx.task, OracleAgent(), ctx.builder, agent_result=ar)
        errors = ar.metadata.get("replay_errors") or []
        details = {"outcome": result.outcome.value, "rewards": result.rewards}
        if errors:
            first = errors[0]
            return GateResult(
                gate=self.name,
                passed=False,
                code="reference_error",
                category="bad_reference",
                components=["calls"],
                details={**details, "replay_errors": errors},
                message=f"reference call {first['index']} ({first['tool']}) failed: {first['error'][:300]}",
            )
        if result.outcome is Outcome.PASSED:
            return GateResult(gate=self.name, passed=True, code="ok", details=details)
        if result.outcome is Outcome.FAILED:
            failing = sorted(k for k, v in result.rewards.items() if k != "reward" and v < 1)
            return GateResult(
                gate=self.name,
                passed=False,
                code="verifiers_reject_reference",
                category="state_mismatch",
                components=["verifiers", "calls"],
                details=details,
                message=f"after the reference calls these verifiers fail: {', '.join(failing)}",
            )
        if result.outcome is Outcome.VERIFIER_ERROR:
            return GateResult(
                gate=self.name,
                passed=False,
                code="verifier_error",
                category="weak_verifier",
                components=["verifiers"],
                details=details,
                message=(result.exception or "")[:500],
            )
        if result.outcome.is_infra:
            return GateResult(
                gate=self.name,
                passed=False,
                code="sandbox_error",
                fault="infra",
                details=details,
                message=(result.exception or "")[:500],
            )
        return GateResult(
            gate=self.name,
            passed=False,
            code=result.outcome.value,
            category="state_mismatch",
            components=["seed_sql", "calls"],
            details=details,
            message=(result.exception or "")[:500],
        )
