"""Checkpoints of one seed's finished steps under work/<seed>/, so a resumed ground run goes on
from where a seed was interrupted instead of asking every model role again:

    workspace.json + workspace/   the assembled workspace (valid while every file has its sha256)
    graph.json                    the fact-checked evidence graph
    spec.v0.json                  the compiled spec
    revision.json                 the reviser's changes and the revised spec
    attempts/<run>.json           an admission decision, beside its teacher run (runs/<run>/)

A step's checkpoint counts only when every step before it came from a checkpoint too (a redone
workspace makes its old graph meaningless); an unreadable checkpoint is redone, never trusted.
Teacher runs are reused by their folder (teacher.py). Checkpoints are written atomically."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentmill.grounded.records import Seed, Spec, Workspace
from agentmill.runtime.atomic import write_text_atomic

T = TypeVar("T", bound=BaseModel)


class Revision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    changed: list[str] = Field(default_factory=list)
    notes: str | None = None
    spec: Spec


class Checkpoints:
    def __init__(self, work: Path, seed: Seed):
        self.work, self.seed = Path(work), seed
        self.chain = True  # every step so far came from a checkpoint
        self._ws: Workspace | None = None
        self._ws_read = False

    def workspace(self) -> Workspace | None:
        if not self._ws_read:
            self._ws, self._ws_read = self._workspace(), True
            self.chain = self._ws is not None
        return self._ws

    def _workspace(self) -> Workspace | None:
        ws = self._read("workspace.json", Workspace)
        if ws is None or ws.seed != self.seed:
            return None
        for f in ws.files:
            p = self.work / "workspace" / f.path
            if not p.is_file() or p.is_symlink() or hashlib.sha256(p.read_bytes()).hexdigest() != f.sha256:
                return None
        return ws

    def load(self, name: str, model: type[T]) -> T | None:
        if not self.chain:
            return None
        record = self._read(name, model)
        if record is None:
            self.chain = False
        return record

    def save(self, name: str, record: BaseModel) -> None:
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, record.model_dump_json(indent=1))

    def _read(self, name: str, model: type[T]) -> T | None:
        try:
            return model.model_validate_json((self.work / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValidationError, json.JSONDecodeError):
            return None
