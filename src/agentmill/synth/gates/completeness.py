"""Verifier completeness: the verifiers must accept every valid solution, not only the reference's.
Each alternative tool path the candidate declares (`alternatives`) is replayed by the oracle in a real
trial, as the reference is by the positive gate; a verifier that rejects one is too strict (it pins
how the work was done, not what the end state is). The solver ballot's passing trials that took
another path than the reference are recorded beside it (`ballot` details), as evidence of the same."""

from __future__ import annotations

import json
from pathlib import Path

from agentmill.synth.candidate import CallSpec, Candidate, write_task_folder
from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.synth.gates.positive import PositiveVerification
from agentmill.tasks.tool_task import load_tool_task


class VerifierCompleteness:
    name = "completeness"

    async def run(self, ctx: GateContext) -> GateResult:
        cand = ctx.candidate
        for i, path in enumerate(cand.body.alternatives):
            alt = Candidate(
                candidate_id=cand.candidate_id,
                card_id=cand.card_id,
                kind=cand.kind,
                parent_id=cand.parent_id,
                body=cand.body.model_copy(update={"calls": path}),
            )
            folder = write_task_folder(alt, ctx.work_dir / f"alternative-{i}" / cand.candidate_id, ctx.settings.env)
            replay = GateContext(
                candidate=alt,
                task=load_tool_task(folder),
                task_dir=folder,
                work_dir=folder.parent,
                builder=ctx.builder,
                clients=ctx.clients,
                settings=ctx.settings,
            )
            r = await PositiveVerification().run(replay)
            if r.passed or r.fault == "infra":
                if r.fault == "infra":
                    return r.model_copy(update={"gate": self.name})
                continue
            tools = " -> ".join(c.tool for c in path)
            if r.code == "verifiers_reject_reference":
                return GateResult(
                    gate=self.name,
                    passed=False,
                    code="verifiers_reject_alternative",
                    category="weak_verifier",
                    components=["verifiers", "alternatives"],
                    details=r.details,
                    message=f"alternative {i} ({tools}) solves the task another way, but "
                    f"{r.message.split(': ', 1)[-1]} fail: a verifier checks how, not what",
                )
            return GateResult(
                gate=self.name,
                passed=False,
                code="alternative_error",
                category="bad_reference",
                components=["alternatives"],
                details=r.details,
                message=f"alternative {i} ({tools}): {r.code}: {r.message}"[:800],
            )
        return GateResult.ok(self.name, alternatives=len(cand.body.alternatives))


def _path(calls) -> str:
    return json.dumps([[c.tool, c.arguments] for c in calls], sort_keys=True)


def solver_paths(run_dir: Path, reference: list[CallSpec]) -> dict:
    """The call sequences of the solver's passing ballot trials that differ from the reference: each is a
    valid solution another way that the verifiers accepted (recorded in the ballot's details)."""
    from agentmill.traces.records import iter_traces

    if not (run_dir / "trials").is_dir():
        return {"solver_passing_paths": 0, "solver_alternative_paths": []}
    ref, seen, passing = _path(reference), set(), 0
    for rec in iter_traces(run_dir):
        if rec.outcome != "passed":
            continue
        passing += 1
        calls = [
            CallSpec(tool=c.function_name, arguments=c.arguments)
            for step in rec.trajectory.steps
            for c in (step.tool_calls or [])
        ]
        if _path(calls) != ref:
            seen.add(" -> ".join(c.tool for c in calls) or "(no calls)")
    return {"solver_passing_paths": passing, "solver_alternative_paths": sorted(seen)}
