"""Negative verification: check's mutation audit (verify/mutation.py) over the candidate. The
untouched state must fail (else the verifiers are vacuous), and every wrong end state made from the
oracle's (undo the last write, change a written field, the right change on another record) must
fail at least one verifier (else a mutant survives: a weak verifier)."""

from __future__ import annotations

from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.verify.mutation import audit_tool_task


class NegativeVerification:
    name = "negative"

    async def run(self, ctx: GateContext) -> GateResult:
        audit = await audit_tool_task(ctx.task, builder=ctx.builder)
        details = audit.to_json()
        if audit.error:
            return GateResult(
                gate=self.name,
                passed=False,
                code="audit_error",
                fault="infra",
                message=audit.error[:500],
                details=details,
            )
        errors = [lint for lint in audit.lints if lint.severity == "error"]
        if errors:
            lint = errors[0]
            return GateResult(
                gate=self.name,
                passed=False,
                code=lint.code,
                category="weak_verifier",
                components=["verifiers"],
                details=details,
                message=f"{lint.verifier + ': ' if lint.verifier else ''}{lint.message}"[:500],
            )
        survivors = audit.survivors
        if any(m.name == "noop" for m in survivors):
            return GateResult(
                gate=self.name,
                passed=False,
                code="vacuous",
                category="weak_verifier",
                components=["verifiers"],
                details=details,
                message="the untouched state passes every verifier",
            )
        if survivors:
            return GateResult(
                gate=self.name,
                passed=False,
                code="mutant_survived",
                category="weak_verifier",
                components=["verifiers"],
                details=details,
                message="; ".join(f"{m.name} ({m.description})" for m in survivors)[:800],
            )
        if not audit.mutants and "noop" not in audit.skipped:  # a refusal leaves the state as it was
            return GateResult(
                gate=self.name,
                passed=False,
                code="no_wrong_state",
                category="weak_verifier",
                components=["verifiers", "calls"],
                details=details,
                message="no wrong end state could be made: nothing distinguishes success",
            )
        return GateResult(gate=self.name, passed=True, code="ok", details=details)
