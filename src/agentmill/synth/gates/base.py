"""One interface for every gate: a candidate (as a loaded tool task) in, a typed verdict out.

A gate never raises for the candidate's faults: they are a failed `GateResult` with a short `code`
(what went wrong), a `category` hint (which of the critic's six diagnoses it points to) and the
components a repair should look at. Faults that are not the candidate's (an endpoint down, a broken
sandbox) are `fault="infra"`: the box stops without blaming the candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agentmill.images import ImageBuilder
from agentmill.models.client import ModelClient
from agentmill.synth.candidate import Candidate
from agentmill.tasks.model import Task

# the critic's six diagnoses (the seed's list)
Category = Literal[
    "state_mismatch",
    "impossible_workflow",
    "bad_task_composition",
    "bad_reference",
    "weak_verifier",
    "capability_mismatch",
]
CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]


class GateResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gate: str
    passed: bool
    code: str = Field(description="'ok' or what failed, e.g. unknown_tool, mutant_survived, too_easy")
    message: str = ""
    fault: Literal["candidate", "infra"] = "candidate"
    category: Category | None = None
    components: list[str] = Field(default_factory=list, description="what a repair should change")
    details: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def ok(cls, gate: str, **details: Any) -> GateResult:
        return cls(gate=gate, passed=True, code="ok", details=details)


@dataclass
class GateContext:
    """What a gate may use: the candidate as a task folder, the roles' clients, shared machinery."""

    candidate: Candidate
    task: Task
    task_dir: Path
    work_dir: Path  # this attempt's own scratch folder (ballot run folders live here)
    builder: ImageBuilder
    clients: dict[str, ModelClient]
    settings: Any  # config.SynthConfig
    prompts: Any = None  # prompt_files loader override folder
    card_view: dict = field(default_factory=dict)
    accepted: Callable[[], list[Candidate]] | None = None  # the store's accepted samples (duplicate check)


class Gate(Protocol):
    name: str

    async def run(self, ctx: GateContext) -> GateResult: ...
