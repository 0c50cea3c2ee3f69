"""Records of a tool task (stateful tool use, EnterpriseOps-Gym compatible): gyms, verifiers, reference calls.

The verifier schema is EnterpriseOps-Gym's: `{name, verifier_type, validation_config, gym_name?}`
with `database_state`, `response_check` and `tool_execution` configs. One schema each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GymRef(_Record):
    """A gym a task uses: its name and the host folder with schema.sql, seed.sql, tools.py."""

    name: str
    path: Path
    bundled: bool = False


class DatabaseStateConfig(_Record):
    query: str = Field(min_length=1)
    expected_value: Any = None
    comparison_type: Literal["equals", "greater_than", "less_than", "contains"] = "equals"


class ResponseCheckConfig(_Record):
    sql_query: str = Field(min_length=1)
    comparison_prompt: str = Field(min_length=1)
    minimum_comparison_value: float = 7
    # what the judge scores: the agent's final answer (EnterpriseOps-Gym's response_check), or the
    # query's rows when they hold prose the agent wrote into the database (an article body, a note)
    subject: Literal["final_answer", "query_result"] = "final_answer"


class ToolExecutionConfig(_Record):
    selected_tools: list[str] = Field(default_factory=list)
    minimum_tool_calls: int = Field(1, ge=0)


class _VerifierBase(_Record):
    name: str = Field(min_length=1)
    description: str | None = None
    gym_name: str | None = None


class DatabaseStateVerifier(_VerifierBase):
    verifier_type: Literal["database_state"]
    validation_config: DatabaseStateConfig


class ResponseCheckVerifier(_VerifierBase):
    verifier_type: Literal["response_check"]
    validation_config: ResponseCheckConfig


class ToolExecutionVerifier(_VerifierBase):
    verifier_type: Literal["tool_execution"]
    validation_config: ToolExecutionConfig


Verifier = Annotated[
    DatabaseStateVerifier | ResponseCheckVerifier | ToolExecutionVerifier, Field(discriminator="verifier_type")
]


class ReferenceCall(_Record):
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolSpec(_Record):
    """Everything a tool task adds to the task record."""

    gyms: tuple[GymRef, ...]
    seeds: tuple[Path, ...] = ()  # environment/seed.sql: applied over the gyms' base data
    verifiers: tuple[Verifier, ...] = ()
    calls: tuple[ReferenceCall, ...] | None = None  # solution/calls.json; None = no reference
    answer: str | None = None  # the reference final answer, when calls.json gives one
    selected_tools: tuple[str, ...] = ()  # the tools the agent sees (empty: all)
    restricted_tools: tuple[str, ...] = ()  # never shown to the agent
    tool_timeout_sec: float = 30.0

    def gym(self, name: str | None) -> GymRef:
        if name is None:
            return self.gyms[0]
        for g in self.gyms:
            if g.name == name:
                return g
        raise KeyError(name)
