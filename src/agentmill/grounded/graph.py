"""The evidence graph: facts in files (nodes) and the dependencies needed to interpret, compare,
contrast or derive (edges). A model proposes it; every fact is then checked deterministically to
be recoverable from its file at its locator, and facts that are not are dropped, with a count.
The graph is not an answer key: it is the set of claims that the files demonstrably support."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentmill.grounded import prompts, readers
from agentmill.grounded.ask import ask_json
from agentmill.grounded.assemble import seed_brief
from agentmill.grounded.locate import extract, same_value
from agentmill.grounded.records import Edge, FactNode, Graph, Locator, Workspace
from agentmill.models import ModelClient


class NodeDraft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    file: str
    field: str
    value: str
    locator: Locator


class GraphDraft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: list[NodeDraft] = Field(min_length=1)
    edges: list[Edge] = Field(default_factory=list)


def workspace_view(ws: Workspace, ws_dir: Path, *, rows: int = 25) -> str:
    parts = []
    for f in ws.files:
        try:
            body = readers.preview(ws_dir / f.path, rows=rows)
        except readers.UnreadableFile as e:
            body = f"(unreadable: {e})"
        parts.append(f"=== file: {f.path} (role: {f.role}) ===\n{body}")
    return "\n\n".join(parts)


def check_facts(ws: Workspace, ws_dir: Path, draft: GraphDraft) -> Graph:
    """Keep the facts whose value is recovered at their locator; drop the rest with the reason."""
    roles = {f.path: f.role for f in ws.files}
    nodes, dropped, ids = [], [], set()
    for n in draft.nodes:
        if n.id in ids:
            dropped.append({"id": n.id, "reason": "duplicate node id"})
            continue
        if n.file not in roles:
            dropped.append({"id": n.id, "reason": f"file '{n.file}' is not in the workspace"})
            continue
        got = extract(ws_dir / n.file, n.locator)
        if not same_value(got, n.value):
            dropped.append(
                {"id": n.id, "reason": f"not recoverable: {n.locator.kind} gives {got!r}, claimed {n.value!r}"}
            )
            continue
        ids.add(n.id)
        nodes.append(
            FactNode(id=n.id, file=n.file, field=n.field, value=n.value, locator=n.locator, role=roles[n.file])
        )
    edges = [e for e in draft.edges if e.src in ids and e.dst in ids]
    dropped += [
        {"edge": f"{e.src}->{e.dst}", "reason": "endpoint dropped or unknown"} for e in draft.edges if e not in edges
    ]
    return Graph(nodes=nodes, edges=edges, dropped=dropped)


async def build_graph(ws: Workspace, ws_dir: Path, client: ModelClient, *, prompts_dir: Path | None = None) -> Graph:
    text = prompts.render(
        "graph", prompts_dir, seed=seed_brief(ws.seed), case=ws.case, files=workspace_view(ws, ws_dir)
    )
    draft = await ask_json(client, [{"role": "user", "content": text}], GraphDraft, role="grapher")
    return check_facts(ws, ws_dir, draft)
