"""A candidate that overlaps the evaluation data (the diagnosis tasks, `synth.benchmarks`) is refused
before any sandbox starts: trained on, it would inflate the very scores the run means to raise
(synth/decontam.py has the rules; the index is built once per run)."""

from __future__ import annotations

from agentmill.synth.gates.base import GateContext, GateResult


class ContaminationGate:
    name = "contamination"

    def __init__(self, benchmarks: list[str]):
        from agentmill.synth.decontam import Checker

        self.benchmarks = benchmarks
        # built now: a benchmark folder that does not load is one clear error before any box starts
        self._checker = Checker(benchmarks) if benchmarks else None

    async def run(self, ctx: GateContext) -> GateResult:
        if self._checker is None:
            return GateResult.ok(self.name, benchmarks=0)
        reason = self._checker.overlap(ctx.task)
        if reason:
            return GateResult(
                gate=self.name,
                passed=False,
                code="eval_overlap",
                category="bad_task_composition",
                components=["prompt", "seed_sql", "entities", "calls", "answer", "verifiers"],
                message=f"{reason}: a synthesised task must not repeat evaluation data; write the "
                "request in your own words over other records",
                details={"reason": reason},
            )
        return GateResult.ok(self.name, benchmark_tasks=self._checker.indexed)
