"""The capability card: what a generator may know about a failure, and nothing more.

A card describes a capability abstractly (tools, workflow shape, the failure, the success, the
properties of a correct end state, what may vary). The generator sees `generator_view()` only;
`source_task` is provenance for lineage and is never shown to it.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field

# The fields the generator reads, in order; the barrier checks exactly these.
GENERATOR_FIELDS = (
    "capability",
    "tools",
    "workflow",
    "target_failure",
    "teacher_success",
    "end_state_properties",
    "variable_dimensions",
)


class CapabilityCard(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # names folders (tasks/<card_id>-s0001): a safe file name, never a path
    card_id: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    source_task: str = Field(min_length=1)
    capability: str = Field(min_length=1, description="the capability tested, in general terms")
    tools: list[str] = Field(min_length=1, description="gym tools the workflow needs")
    workflow: list[str] = Field(min_length=1, description="the workflow's structure, one step each")
    target_failure: str = Field(min_length=1, description="where and how the target model failed")
    teacher_success: str = Field(min_length=1, description="what the teacher did that worked")
    end_state_properties: list[str] = Field(min_length=1, description="what a correct end state satisfies")
    variable_dimensions: list[str] = Field(default_factory=list, description="what can vary, capability unchanged")

    @classmethod
    def writer_schema(cls) -> dict:
        """The card writer's reply: the generator's fields only (ids and provenance are ours)."""
        full = cls.model_json_schema()
        return {
            "type": "object",
            "additionalProperties": False,
            "required": list(GENERATOR_FIELDS),
            "properties": {f: full["properties"][f] for f in GENERATOR_FIELDS},
        }

    def generator_view(self) -> dict:
        return self.model_dump(include=set(GENERATOR_FIELDS))

    def texts(self) -> Iterator[tuple[str, str]]:
        """(field path, text) for every string the generator would read, e.g. ('workflow[2]', ...)."""
        for name in GENERATOR_FIELDS:
            value = getattr(self, name)
            if isinstance(value, str):
                yield name, value
            else:
                for i, item in enumerate(value):
                    yield f"{name}[{i}]", item
