"""The revision step: a model reads the files, graph, spec and the teacher's run, checks
naturalness, feasibility, grounding of numbers, anchoring of criteria and sufficiency of the
verification instructions, and returns only the components to change. The compiler keeps the
rest and validates the merged spec like any other."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentmill.grounded import prompts
from agentmill.grounded.ask import ask_json
from agentmill.grounded.graph import workspace_view
from agentmill.grounded.judge import deliverables_view
from agentmill.grounded.records import Criterion, Deliverable, Graph, NegativeCriterion, Spec, Workspace
from agentmill.grounded.spec import graph_view, validate
from agentmill.grounded.teacher import TeacherRun
from agentmill.models import ModelClient
from agentmill.traces.text import truncate_middle


class Changes(BaseModel):
    model_config = ConfigDict(extra="forbid")
    statement: str | None = None
    deliverables: list[Deliverable] | None = None
    criteria: list[Criterion] | None = None
    negatives: list[NegativeCriterion] | None = None


class Revision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    changes: Changes = Field(default_factory=Changes)
    notes: str = ""


def merge(spec: Spec, changes: Changes) -> tuple[Spec, list[str]]:
    """The spec with the changed components replaced; the names of those that really changed."""
    update = {k: v for k, v in changes.model_dump(exclude_none=True).items()}
    merged = Spec.model_validate({**spec.model_dump(), **update})
    changed = [k for k in update if getattr(merged, k) != getattr(spec, k)]
    return merged, changed


def run_view(run: TeacherRun, spec: Spec) -> str:
    steps = [
        f"[{s.source}] {truncate_middle(s.message or '', 1500)}" for s in run.trajectory.steps if s.source != "system"
    ]
    return (
        f"outcome: {run.result.outcome.value}, artifact checks reward: {run.result.reward}\n"
        f"checks:\n{run.result.verifier_stdout.strip()}\n\ntrajectory:\n"
        + "\n".join(steps[-30:])
        + "\n\ndeliverables:\n"
        + deliverables_view(spec, run.deliverables)
    )


async def revise(
    ws: Workspace,
    ws_dir: Path,
    graph: Graph,
    spec: Spec,
    run: TeacherRun,
    client: ModelClient,
    *,
    prompts_dir: Path | None = None,
) -> tuple[Spec, list[str], str]:
    text = prompts.render(
        "revise",
        prompts_dir,
        files=workspace_view(ws, ws_dir),
        graph=graph_view(graph),
        spec=spec.model_dump_json(indent=1),
        run=run_view(run, spec),
    )

    def check(r: Revision) -> None:
        merged, _ = merge(spec, r.changes)
        validate(merged, graph)

    revision = await ask_json(client, [{"role": "user", "content": text}], Revision, role="reviser", check=check)
    merged, changed = merge(spec, revision.changes)
    return merged, changed, revision.notes
