"""Admission of a teacher run: the trial must have ended as the agent's own doing, the trajectory
must not be degenerate (agentmill's trace filters), the deliverables must pass the deterministic
artifact checks (run by the task's verifier in the sandbox), and the judge's quality score must
reach the threshold. The first gate that fails names the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentmill.grounded.judge import judge, quality
from agentmill.grounded.records import Graph, JudgeVerdict, Spec
from agentmill.grounded.teacher import TeacherRun
from agentmill.grounded.verifier import NOT_JUDGED
from agentmill.models import ModelClient
from agentmill.traces.filters import FilterSpec, apply_filters, rules
from agentmill.traces.records import TraceRecord
from agentmill.traces.telemetry import compute_telemetry

Gate = Literal["trial", "degenerate", "checks", "judge", "admitted"]


class AdmissionPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(0.90, ge=0, le=1)
    # degenerate trajectories (the existing trace filters' rules)
    max_repeated_commands: int = Field(10, ge=0)  # repeated non-polling commands
    max_error_rate: float = Field(0.5, ge=0, le=1)  # tool failure rate
    max_truncated: int = Field(5, ge=0)  # repeated truncation
    max_commands: int = Field(400, ge=1)  # excessive tool use


class Admission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    admitted: bool
    gate: Gate
    reason: str
    quality: float | None = None
    verdict: JudgeVerdict | None = None


def trace_record(run: TeacherRun) -> TraceRecord:
    result = json.loads(run.result.model_dump_json())
    trial = (
        json.loads((run.folder / "trial.json").read_text())
        if (run.folder / "trial.json").exists()
        else {"trial_id": run.folder.name}
    )
    return TraceRecord(trial, result, run.trajectory, compute_telemetry(run.trajectory, result))


def degenerate(record: TraceRecord, policy: AdmissionPolicy) -> str | None:
    spec = FilterSpec(
        min_turns=None,
        max_repeated_commands=policy.max_repeated_commands,
        max_error_rate=policy.max_error_rate,
        max_truncated=policy.max_truncated,
    )
    active = [r for r in rules(spec) if r[0] != "outcome"]  # outcomes are judged by the trial gate
    kept, funnel = apply_filters([record], active)
    if not kept:
        step = next(s for s in funnel if s.dropped)
        return f"degenerate trajectory: {step.description}"
    if record.telemetry.commands > policy.max_commands:
        return f"degenerate trajectory: {record.telemetry.commands} commands > {policy.max_commands}"
    return None


ATTEMPTED = ("passed", "failed", "agent_timeout", "unjudged")  # outcomes of a run that can be judged


def checks_passed(result) -> bool:
    """The deterministic checks passed: reward 1, or no reward only because the rubric waited for a
    judge in the trial (unjudged): this gate is that judge."""
    return result.reward == 1.0 or (result.reward is None and NOT_JUDGED in result.verifier_stdout)


async def admit(
    run: TeacherRun,
    spec: Spec,
    graph: Graph,
    ws_dir: Path,
    judge_client: ModelClient,
    *,
    policy: AdmissionPolicy | None = None,
    prompts_dir: Path | None = None,
) -> Admission:
    policy = policy or AdmissionPolicy()
    outcome = run.result.outcome.value
    if outcome not in ATTEMPTED:
        return Admission(
            admitted=False, gate="trial", reason=f"trial ended as {outcome}: {run.result.exception or ''}".strip()
        )
    why = degenerate(trace_record(run), policy)
    if why:
        return Admission(admitted=False, gate="degenerate", reason=why)
    if not checks_passed(run.result):
        failed = [ln[5:] for ln in run.result.verifier_stdout.splitlines() if ln.startswith("FAIL ")]
        return Admission(
            admitted=False, gate="checks", reason="artifact checks failed: " + ("; ".join(failed) or "no report")
        )
    verdict = await judge(spec, graph, ws_dir, run.deliverables, judge_client, mode="anchored", prompts_dir=prompts_dir)
    q = quality(spec, verdict)
    if q < policy.threshold:
        return Admission(
            admitted=False, gate="judge", reason=f"quality {q:.3f} < {policy.threshold:.2f}", quality=q, verdict=verdict
        )
    return Admission(admitted=True, gate="admitted", reason=f"quality {q:.3f}", quality=q, verdict=verdict)
