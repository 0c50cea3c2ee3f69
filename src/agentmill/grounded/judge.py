"""The rubric judge: scores each criterion of a deliverable set, given the anchors (the cited
facts and the files they come from) and the verification instructions; or, as the `unanchored`
arm, the rubric text alone. quality = weighted satisfied fraction - penalties of proven violations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from agentmill.grounded import artifacts, prompts, readers
from agentmill.grounded.ask import ask_json
from agentmill.grounded.records import Criterion, Graph, JudgeVerdict, NegativeCriterion, Spec
from agentmill.models import ModelClient
from agentmill.verify.fence import fence

Mode = Literal["anchored", "unanchored"]


def deliverables_view(spec: Spec, deliverables: Path) -> str:
    return format_deliverables(
        spec, artifacts.render_deliverables([d.model_dump() for d in spec.deliverables], str(deliverables))
    )


def format_deliverables(spec: Spec, texts: dict[str, str]) -> str:
    """The judge's view of the deliverables, from their texts (rendered here, or inside a verifier's sandbox):
    the worker's text, so fenced untrusted JSON (verify/fence.py), one key per deliverable the spec names.
    Text under any other name is not shown: a deliverable cannot add sections of its own."""
    fenced = fence({d.path: texts.get(d.path, NOT_PRODUCED) for d in spec.deliverables})
    return f"{fenced.notice}\nIt maps each deliverable's path to its text.\n{fenced.block}"


NOT_PRODUCED = "(not available: not produced)"


def evidence_view(spec: Spec, graph: Graph, ws_dir: Path, removed: frozenset[str] = frozenset()) -> str:
    """The cited facts and an excerpt of each cited file. `removed` holds files and `file#sheet`
    keys: their facts are shown as removed, and a workbook losing a sheet loses its excerpt (the
    excerpt would show the sheet)."""
    every: list[Criterion | NegativeCriterion] = [*spec.criteria, *spec.negatives]
    cited = [n for n in graph.nodes if any(n.id in c.anchors for c in every)]
    parts = []
    for n in cited:
        sheet_key = f"{n.file}#{n.locator.sheet}"
        if n.file in removed or sheet_key in removed:
            parts.append(f"[{n.id}] {sheet_key if sheet_key in removed else n.file}: (file removed)")
        else:
            parts.append(f"[{n.id}] {n.file} {n.locator.model_dump(exclude_none=True)}: {n.field} = {n.value}")
    hidden = {r.split("#", 1)[0] for r in removed}
    for file in sorted({n.file for n in cited} - hidden):
        try:
            parts.append(f"=== source file: {file} ===\n" + readers.preview(ws_dir / file, rows=15, chars=3000))
        except readers.UnreadableFile as e:
            parts.append(f"=== source file: {file} === (unreadable: {e})")
    return "\n".join(parts)


def rubric_view(spec: Spec, mode: Mode) -> str:
    if mode == "anchored":
        return json.dumps(
            {
                "criteria": [c.model_dump() for c in spec.criteria],
                "negatives": [n.model_dump() for n in spec.negatives],
            },
            indent=1,
        )
    return json.dumps(
        {
            "criteria": [
                {"id": c.id, "artifact": c.artifact, "requirement": c.requirement, "weight": c.weight}
                for c in spec.criteria
            ],
            "negatives": [{"id": n.id, "artifact": n.artifact, "forbidden": n.forbidden} for n in spec.negatives],
        },
        indent=1,
    )


def _check(spec: Spec):
    want = {c.id for c in spec.criteria}
    negatives = {n.id for n in spec.negatives}

    def check(v: JudgeVerdict) -> None:
        got = {s.id for s in v.scores}
        if got != want:
            raise ValueError(f"score exactly the criteria {sorted(want)} (got {sorted(got)})")
        bad = [x.id for x in v.violations if x.id not in negatives]
        if bad:
            raise ValueError(f"violations must name negative criteria {sorted(negatives)} (got {bad})")

    return check


async def judge(
    spec: Spec,
    graph: Graph,
    ws_dir: Path,
    deliverables: Path,
    client: ModelClient,
    *,
    mode: Mode = "anchored",
    removed: frozenset[str] = frozenset(),
    prompts_dir: Path | None = None,
) -> JudgeVerdict:
    return await judge_view(
        spec,
        graph,
        ws_dir,
        deliverables_view(spec, deliverables),
        client,
        mode=mode,
        removed=removed,
        prompts_dir=prompts_dir,
    )


async def judge_view(
    spec: Spec,
    graph: Graph,
    ws_dir: Path,
    deliverables: str,
    client: ModelClient,
    *,
    mode: Mode = "anchored",
    removed: frozenset[str] = frozenset(),
    prompts_dir: Path | None = None,
) -> JudgeVerdict:
    """The judge over deliverables already rendered as text (`format_deliverables`)."""
    evidence = evidence_view(spec, graph, ws_dir, removed) if mode == "anchored" else "(not provided)"
    text = prompts.render(
        f"judge_{mode}",
        prompts_dir,
        statement=spec.statement,
        rubric=rubric_view(spec, mode),
        evidence=evidence,
        deliverables=deliverables,
    )
    return await ask_json(
        client,
        [{"role": "user", "content": text}],
        JudgeVerdict,
        role=f"judge ({mode})",
        check=_check(spec),
        strict=True,
    )


def quality(spec: Spec, verdict: JudgeVerdict) -> float:
    scores = {s.id: s.score for s in verdict.scores}
    total = sum(c.weight for c in spec.criteria)
    satisfied = sum(c.weight * scores.get(c.id, 0.0) for c in spec.criteria) / total
    penalties = {n.id: n.penalty for n in spec.negatives}
    penalty = sum(penalties[v.id] for v in verdict.violations if v.proven and v.id in penalties)
    return max(0.0, min(1.0, satisfied - penalty))
