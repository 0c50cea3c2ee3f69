"""First gate: a repeat of an accepted sample (or a variant that changes nothing of its parent) is
refused before any sandbox starts for it (synth/dedupe.py has the rules)."""

from __future__ import annotations

from agentmill.synth.gates.base import GateContext, GateResult


class NoveltyGate:
    name = "novelty"

    async def run(self, ctx: GateContext) -> GateResult:
        from agentmill.synth.dedupe import check  # dedupe reads GateResult from this package

        accepted = ctx.accepted() if ctx.accepted is not None else []
        return check(ctx.candidate, accepted, ctx.settings.synth.duplicate_threshold)
