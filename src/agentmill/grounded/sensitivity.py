"""Judge sensitivity: remove a cited file (or one sheet of it) from what the judge sees, or corrupt
its cited facts finely (numbers, rows, citations: corruption.py), and re-score. Criteria citing it
should drop; the others should not move. Reports both figures, as GraphForge does (mean drop of
the cited criteria, mean absolute change of the others)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentmill.grounded.corruption import Kind, corrupt
from agentmill.grounded.judge import judge
from agentmill.grounded.records import Graph, Spec
from agentmill.models import ModelClient


class SensitivityReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    removed: str
    cited: list[str]
    others: list[str]
    before: dict[str, float]
    after: dict[str, float]
    mean_drop_cited: float | None
    mean_abs_change_others: float | None


def citing(spec: Spec, graph: Graph, removed: str) -> list[str]:
    """Criteria with an anchor in the removed file (`file`) or sheet (`file#sheet`)."""
    hit = {n.id for n in graph.nodes if n.file == removed or f"{n.file}#{n.locator.sheet}" == removed}
    return [c.id for c in spec.criteria if hit & set(c.anchors)]


async def sensitivity(
    spec: Spec,
    graph: Graph,
    ws_dir: Path,
    deliverables: Path,
    client: ModelClient,
    removed: str,
    *,
    prompts_dir: Path | None = None,
    kind: Kind | None = None,
) -> SensitivityReport:
    """`kind` None: the file is removed from the judge's view; else its cited facts are corrupted so."""
    before = await judge(spec, graph, ws_dir, deliverables, client, prompts_dir=prompts_dir)
    if kind is None:
        after = await judge(
            spec, graph, ws_dir, deliverables, client, removed=frozenset({removed}), prompts_dir=prompts_dir
        )
    else:
        with tempfile.TemporaryDirectory(prefix="agentmill-corrupt-") as tmp:
            bad_graph, bad_ws = corrupt(kind, graph, ws_dir, removed, Path(tmp))
            after = await judge(spec, bad_graph, bad_ws, deliverables, client, prompts_dir=prompts_dir)
        removed = f"{kind}:{removed}"
    b = {s.id: s.score for s in before.scores}
    a = {s.id: s.score for s in after.scores}
    cited = citing(spec, graph, removed.split(":", 1)[1] if kind else removed)
    others = [c.id for c in spec.criteria if c.id not in cited]
    return SensitivityReport(
        removed=removed,
        cited=cited,
        others=others,
        before=b,
        after=a,
        mean_drop_cited=sum(b[c] - a[c] for c in cited) / len(cited) if cited else None,
        mean_abs_change_others=sum(abs(b[c] - a[c]) for c in others) / len(others) if others else None,
    )
