"""The records of grounded synthesis, one schema each: seed, workspace, evidence graph, task spec,
judge verdict. Everything a model returns is validated into one of these before it is used."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

Role = Literal["core", "supporting", "confuser", "ambient"]
ROLES: tuple[str, ...] = ("core", "supporting", "confuser", "ambient")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Record):
    """O*NET text a seed cites: the task statement and the DWA it maps to."""

    task_id: str
    task: str
    dwa_id: str
    dwa_title: str


class Seed(_Record):
    """Fixes a task's direction; the real files supply its content. Case-neutral: no company,
    event or dataset is named."""

    seed_id: str
    occupation_code: str
    occupation: str
    sector: str  # SOC major group title
    task_type: str  # the DWA title
    requirement: str  # occupation-specific work requirement, supported by `evidence`
    pattern: str  # one of patterns.PATTERNS
    file_family: str  # expected input-file family
    evidence: Evidence

    def coverage_keys(self) -> dict[str, str]:
        return {
            "occupation": self.occupation_code,
            "task_type": self.evidence.dwa_id,
            "pattern": self.pattern,
            "file_family": self.file_family,
        }


class WorkspaceFile(_Record):
    path: str  # relative to the workspace root
    source: str  # where it came from (corpus path or user folder path)
    role: Role
    sha256: str


class Workspace(_Record):
    """A folder of real files for one seed. Roles are hidden: stored here, never in the folder."""

    seed: Seed
    case: str = ""  # the assembler's one-line description of the coherent case
    files: list[WorkspaceFile]

    def role_of(self, path: str) -> str | None:
        return next((f.role for f in self.files if f.path == path), None)


class Locator(_Record):
    """Where a fact sits in its file, for deterministic extraction.
    cell: xlsx `sheet` + `cell` (A1); row_field: tabular `row` (1-based data row) + `field` (column
    name); json_path: `path` (dot-separated keys/indices); span: `text` occurs verbatim."""

    kind: Literal["cell", "row_field", "json_path", "span"]
    sheet: str | None = None
    cell: str | None = None
    row: int | None = Field(None, ge=1)
    field: str | None = None
    path: str | None = None
    text: str | None = None


class FactNode(_Record):
    id: str
    file: str
    field: str  # what the fact is, in words
    value: str
    locator: Locator
    role: Role  # copied from the workspace, never from the model


class Edge(_Record):
    src: str
    dst: str
    relation: Literal["interpret", "compare", "contrast", "derive"]
    note: str = ""


class Graph(_Record):
    nodes: list[FactNode]
    edges: list[Edge]
    dropped: list[dict] = Field(default_factory=list)  # facts that failed the recoverability check, with why

    def node(self, node_id: str) -> FactNode | None:
        return next((n for n in self.nodes if n.id == node_id), None)


class Deliverable(_Record):
    """One output file the agent must produce, with its deterministic artifact checks."""

    path: str  # relative to /app/output
    format: Literal["csv", "xlsx", "docx", "pdf", "md", "txt", "json"]
    columns: list[str] = Field(default_factory=list)  # csv/xlsx: required header cells
    sheets: list[str] = Field(default_factory=list)  # xlsx: required sheet names
    formulas: bool = False  # xlsx: at least one formula cell
    sections: list[str] = Field(default_factory=list)  # md/docx/pdf/txt: required headings (pdf: lines)


class Criterion(_Record):
    id: str
    artifact: str  # deliverable path
    requirement: str
    expected: str  # expected value or computation
    weight: float = Field(gt=0)
    anchors: list[str] = Field(min_length=1)  # graph node ids
    verification: str


class NegativeCriterion(_Record):
    id: str
    artifact: str
    forbidden: str  # a specific forbidden outcome, penalised only when directly proven
    penalty: float = Field(gt=0, le=1)
    anchors: list[str] = Field(default_factory=list)


class Spec(_Record):
    statement: str
    deliverables: list[Deliverable] = Field(min_length=1)
    criteria: list[Criterion] = Field(min_length=1)
    negatives: list[NegativeCriterion] = Field(default_factory=list)


class _Reply(BaseModel):
    """A judge's reply: what it must say is checked strictly (ids, scores in [0, 1]); what a valid
    but talkative judge adds (an overall score, a summary, a null reason) is not a reason to ask again."""

    model_config = ConfigDict(extra="ignore")


def _text(v) -> str:
    return "" if v is None else v if isinstance(v, str) else str(v)


class CriterionScore(_Reply):
    id: str
    score: float = Field(ge=0, le=1)
    reason: Annotated[str, BeforeValidator(_text)] = ""


class Violation(_Reply):
    id: str
    proven: bool
    evidence: Annotated[str, BeforeValidator(_text)] = ""


class JudgeVerdict(_Reply):
    scores: list[CriterionScore]
    violations: list[Violation] = Field(default_factory=list)
