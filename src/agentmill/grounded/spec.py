"""The task spec compiler: graph -> statement, deliverables, positive criteria anchored to graph
nodes, negative criteria. The agent sees only `instruction(spec)` and the workspace files; node ids
and roles stay in the rubric (tests/), which the agent never sees."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from agentmill.grounded import prompts
from agentmill.grounded.ask import ask_json
from agentmill.grounded.assemble import seed_brief
from agentmill.grounded.graph import workspace_view
from agentmill.grounded.quality import untraceable
from agentmill.grounded.records import Criterion, Graph, NegativeCriterion, Spec, Workspace
from agentmill.models import ModelClient

OUTPUT_DIR = "/app/output"
# Words that would tell the agent which files matter: the hidden roles' names and the word "role".
_ROLE_WORDS = re.compile(
    r"\b(confusers?|ambient|core files?|supporting files?|hidden roles?|file roles?|evidence graph|anchors?)\b",
    re.IGNORECASE,
)


def instruction(spec: Spec) -> str:
    """What the agent reads: the statement and where and how to save each deliverable."""
    lines = [
        spec.statement.strip(),
        "",
        f"The files you need are in /app. Save your deliverables in {OUTPUT_DIR}/ (create it):",
    ]
    for d in spec.deliverables:
        extra = []
        if d.sheets:
            extra.append("sheets: " + ", ".join(d.sheets))
        if d.columns:
            extra.append("columns: " + ", ".join(d.columns))
        if d.formulas:
            extra.append("computed cells as spreadsheet formulas")
        if d.sections:
            extra.append("sections: " + ", ".join(d.sections))
        lines.append(f"- {OUTPUT_DIR}/{d.path} ({d.format}{'; ' + '; '.join(extra) if extra else ''})")
    return "\n".join(lines) + "\n"


def statement_hash(spec: Spec) -> str:
    """Hash of the normalised agent-facing instruction: equal hashes mean the teacher's run stands."""
    norm = re.sub(r"\s+", " ", instruction(spec)).strip().casefold()
    return hashlib.sha256(norm.encode()).hexdigest()


def leaks(spec: Spec, graph: Graph) -> list[str]:
    """Node ids or role words in what the agent sees."""
    text = instruction(spec)
    found = [f"node id '{n.id}'" for n in graph.nodes if re.search(rf"(?<![\w-]){re.escape(n.id)}(?![\w-])", text)]
    found += [f"role word '{m.group(0)}'" for m in _ROLE_WORDS.finditer(text)]
    return found


def validate(spec: Spec, graph: Graph) -> None:
    """Raise ValueError (a message for the compiler model) if the spec is not usable."""
    ids = {n.id for n in graph.nodes}
    paths = {d.path for d in spec.deliverables}
    problems = []
    for d in spec.deliverables:
        if d.path.startswith("/") or ".." in d.path.split("/") or not d.path.strip():
            problems.append(f"deliverable path '{d.path}' must be a plain relative name")
    every: list[Criterion | NegativeCriterion] = [*spec.criteria, *spec.negatives]
    for c in every:
        if c.artifact not in paths:
            problems.append(f"criterion {c.id}: artifact '{c.artifact}' is not a deliverable")
        bad = [a for a in c.anchors if a not in ids]
        if bad:
            problems.append(f"criterion {c.id}: anchors {bad} are not graph nodes (nodes: {sorted(ids)})")
    if len({c.id for c in every}) != len(every):
        problems.append("criterion ids must be unique")
    problems += [f"the statement reveals {x}" for x in leaks(spec, graph)]
    problems += untraceable(spec, instruction(spec))
    if problems:
        raise ValueError("; ".join(problems))


def graph_view(graph: Graph) -> str:
    return json.dumps(
        {"nodes": [n.model_dump() for n in graph.nodes], "edges": [e.model_dump() for e in graph.edges]}, indent=1
    )


async def compile_spec(
    ws: Workspace, ws_dir: Path, graph: Graph, client: ModelClient, *, prompts_dir: Path | None = None
) -> Spec:
    text = prompts.render(
        "spec",
        prompts_dir,
        seed=seed_brief(ws.seed),
        case=ws.case,
        files=workspace_view(ws, ws_dir),
        graph=graph_view(graph),
    )
    return await ask_json(
        client, [{"role": "user", "content": text}], Spec, role="compiler", check=lambda s: validate(s, graph)
    )
