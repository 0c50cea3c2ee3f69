"""Workspace assembly: a model searches the sources (BM25 as a tool) for a coherent case for a
seed, picks real files and gives each a hidden role. Files are copied byte for byte into
`<dir>/workspace/`; the roles go to `<dir>/workspace.json`, which never enters a task's
environment."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentmill.grounded import prompts
from agentmill.grounded.ask import ModelReplyError, ask_json
from agentmill.grounded.quality import confuser_problems
from agentmill.grounded.records import Role, Seed, Workspace, WorkspaceFile
from agentmill.grounded.retrieval import FileIndex
from agentmill.models import ModelClient


class Pick(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    role: Role


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["search", "select"]
    query: str = ""
    case: str = ""
    files: list[Pick] = Field(default_factory=list)


class Sources(FileIndex):
    """Named source folders; a file is addressed as `<name>/<path inside it>`."""

    def search_reply(self, query: str, k: int = 8) -> list[dict]:
        """The search tool's reply to the model."""
        return [{"path": h.path, "score": round(h.score, 3), "snippet": h.snippet} for h in self.search(query, k)]

    def file(self, path: str) -> Path:
        """The file behind a path the searches returned (the assembler selects only those)."""
        found = self.resolve(path)
        if found is None:
            raise ValueError(f"{path}: not a file of the sources")
        return found


def seed_brief(seed: Seed) -> str:
    return (
        f"occupation: {seed.occupation} ({seed.sector})\ntask type: {seed.task_type}\n"
        f"work requirement: {seed.requirement}\nexecution pattern: {seed.pattern}\n"
        f"expected input files: {seed.file_family}"
    )


async def assemble(
    seed: Seed,
    sources: Sources,
    client: ModelClient,
    dest: Path,
    *,
    max_steps: int = 8,
    prompts_dir: Path | None = None,
) -> Workspace:
    system = prompts.render("assemble", prompts_dir, seed=seed_brief(seed))
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Begin: search for a case."}]
    seen: set[str] = set()

    def check(a: Action) -> None:
        if a.action == "search" and not a.query.strip():
            raise ValueError("a search needs a non-empty 'query'")
        if a.action == "select":
            unknown = [p.path for p in a.files if p.path not in seen]
            if unknown:
                raise ValueError(f"select only files your searches returned; not returned: {', '.join(unknown)}")
            if not any(p.role == "core" for p in a.files):
                raise ValueError("at least one file must have the role 'core'")
            if len({p.path for p in a.files}) != len(a.files):
                raise ValueError("a file is selected twice")
            problems = confuser_problems([(p.path, p.role, sources.file(p.path)) for p in a.files])
            if problems:
                raise ValueError("; ".join(problems))

    for _ in range(max_steps):
        action = await ask_json(client, messages, Action, role="assembler", check=check)
        messages.append({"role": "assistant", "content": action.model_dump_json()})
        if action.action == "search":
            hits = sources.search_reply(action.query)
            seen.update(h["path"] for h in hits)
            messages.append({"role": "user", "content": "search results:\n" + json.dumps(hits, indent=1)})
            continue
        return _materialise(seed, action, sources, dest)
    raise ModelReplyError(f"assembler: no selection after {max_steps} steps")


def _materialise(seed: Seed, action: Action, sources: Sources, dest: Path) -> Workspace:
    ws_dir = dest / "workspace"
    shutil.rmtree(ws_dir, ignore_errors=True)
    ws_dir.mkdir(parents=True)
    files = []
    for pick in action.files:
        src = sources.file(pick.path)
        rel = pick.path.partition("/")[2]
        out = ws_dir / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
        files.append(
            WorkspaceFile(
                path=rel, source=pick.path, role=pick.role, sha256=hashlib.sha256(out.read_bytes()).hexdigest()
            )
        )
    ws = Workspace(seed=seed, case=action.case, files=files)
    (dest / "workspace.json").write_text(ws.model_dump_json(indent=1))
    return ws
