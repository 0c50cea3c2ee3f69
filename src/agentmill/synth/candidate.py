"""A synthesised tool task before it is accepted: the generator's output, one schema.

A candidate is (system spec, user prompt, seed state SQL over the gym, reference calls, verifiers)
plus the existing records it is about (`entities`, checked to exist by the structural lint) and any
other valid tool paths (`alternatives`, which the verifiers must accept too: gates/completeness.py). It is
written as a tool-task folder (tasks/tool_task.py's format) for every gate that runs it, and for
the accepted output, so `agentmill check`, rollouts and recipes read it as any other task.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentmill.errors import AgentmillError

Kind = Literal["target", "multiply"]
# what a repair may change, one name per part of the candidate
COMPONENTS = ("system", "prompt", "seed_sql", "calls", "answer", "verifiers", "entities", "alternatives", "documents")


class CandidateParseError(AgentmillError):
    """A generator (or repair) reply that is not a candidate: the attempt fails, the run goes on."""


class EntityRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    table: str = Field(min_length=1)
    column: str = Field(min_length=1)
    value: Any


class Document(BaseModel):
    """A knowledge document the task's setup gives the agent (a runbook, a policy page): part of the task
    tuple, shown under the system specification and kept as a file of the task."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1)


class CallSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class CandidateBody(BaseModel):
    """What the generator writes: exactly the parts of a task."""

    model_config = ConfigDict(extra="forbid")
    system: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    seed_sql: str = ""
    calls: list[CallSpec] = Field(min_length=1)
    answer: str | None = None
    verifiers: list[dict[str, Any]] = Field(min_length=1, description="EnterpriseOps-Gym verifier objects")
    entities: list[EntityRef] = Field(default_factory=list, description="existing records the task is about")
    alternatives: list[list[CallSpec]] = Field(
        default_factory=list,
        description="other valid call sequences that "
        "solve the task (another tool path); the verifiers must accept each",
    )
    documents: list[Document] = Field(default_factory=list, description="knowledge documents the agent is given")


class Candidate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    candidate_id: str = Field(min_length=1)
    card_id: str = Field(min_length=1)
    kind: Kind = "target"
    parent_id: str | None = None  # multiply: the accepted target sample it varies
    body: CandidateBody


# a JSON scalar: what an entity value or an expected value may be (an untyped `Any` has no grammar)
_SCALAR = {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]}
# the verifier shape the generator prompt asks for (the lint still accepts every EnterpriseOps-Gym type)
_VERIFIER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "verifier_type", "validation_config"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "verifier_type": {"const": "database_state"},
        "validation_config": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query", "expected_value"],
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "expected_value": _SCALAR,
                "comparison_type": {"type": "string", "enum": ["equals", "greater_than", "less_than", "contains"]},
            },
        },
    },
}


def _typed(schema: dict) -> dict:
    """Every untyped (`Any`) sub-schema made a scalar: grammar-based decoders refuse a schema with none."""
    if not ({"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"} & set(schema)):
        return {**schema, **_SCALAR}
    out = dict(schema)
    for key in ("properties", "$defs"):
        if key in out:
            out[key] = {name: _typed(sub) for name, sub in out[key].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _typed(out["items"])
    return out


def candidate_schema() -> dict:
    """The generator's reply as a JSON schema (asked for as constrained decoding where supported)."""
    schema = _typed(CandidateBody.model_json_schema())
    schema["properties"]["verifiers"] = {**schema["properties"]["verifiers"], "items": _VERIFIER}
    return schema


def repair_schema(components: list[str]) -> dict:
    """A repair reply: exactly the implicated components, nothing else."""
    full = candidate_schema()
    schema = {
        "type": "object",
        "properties": {c: full["properties"][c] for c in components},
        "required": list(components),
        "additionalProperties": False,
    }
    if "$defs" in full:
        schema["$defs"] = full["$defs"]
    return schema


def _json_object(text: str) -> Any:
    """The JSON object in a model reply: bare, fenced, or the outermost {...}."""
    body = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.S)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise CandidateParseError(f"no JSON object in the reply: {text[:200]!r}") from None
        try:
            return json.loads(body[start : end + 1])
        except json.JSONDecodeError as e:
            raise CandidateParseError(
                f"the reply's JSON does not parse ({e.msg} at column {e.colno}): {text[:200]!r}"
            ) from None


def parse_body(text: str) -> CandidateBody:
    data = _json_object(text)
    try:
        return CandidateBody.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise CandidateParseError(f"the reply is not a candidate: field '{field}': {err['msg']}") from None


def parse_partial(text: str, allowed: list[str]) -> dict[str, Any]:
    """A repair reply: only the `allowed` components, each validated; others are refused."""
    data = _json_object(text)
    if not isinstance(data, dict):
        raise CandidateParseError("the repair reply is not a JSON object")
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise CandidateParseError(f"the repair changed components it was not asked to: {extra}")
    return data


def apply_repair(body: CandidateBody, changes: dict[str, Any]) -> CandidateBody:
    merged = {**body.model_dump(), **changes}
    try:
        return CandidateBody.model_validate(merged)
    except ValidationError as e:
        err = e.errors()[0]
        raise CandidateParseError(
            f"the repaired candidate is invalid: field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"
        ) from None


class GymSet(BaseModel):
    """The environment generated tasks run on: bundled gym names, or one local gym folder."""

    model_config = ConfigDict(extra="forbid")
    gyms: list[str] = Field(default_factory=list, description="bundled gyms (itsm, collab)")
    gym_dir: Path | None = Field(
        None, description="a gym folder (schema.sql, seed.sql, tools.py) copied into each task"
    )


def system_text(b: CandidateBody) -> str:
    """The system specification, then the knowledge documents the task's setup gives the agent."""
    parts = [b.system.strip()]
    if b.documents:
        parts.append("## Reference documents")
        parts += [f"### {d.title.strip()}\n\n{d.text.strip()}" for d in b.documents]
    return "\n\n".join(parts) + "\n"


def write_task_folder(candidate: Candidate, dest: Path, env: GymSet) -> Path:
    """The candidate as a tool-task folder (written fresh; the caller renames it into place)."""
    b = candidate.body
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "environment").mkdir(parents=True)
    (dest / "tests").mkdir()
    (dest / "solution").mkdir()
    (dest / "instruction.md").write_text(b.prompt.strip() + "\n")
    (dest / "system.md").write_text(system_text(b))
    for i, doc in enumerate(b.documents):  # also as files: the decontamination check compares them byte for byte
        (dest / "documents").mkdir(exist_ok=True)
        (dest / "documents" / f"{i:02d}.md").write_text(f"# {doc.title.strip()}\n\n{doc.text.strip()}\n")
    gyms = ", ".join(json.dumps(g) for g in env.gyms)
    lineage = {
        "card": candidate.card_id,
        "kind": candidate.kind,
        **({"parent": candidate.parent_id} if candidate.parent_id else {}),
    }
    meta = "\n".join(f"synth_{k} = {json.dumps(v)}" for k, v in lineage.items())
    (dest / "task.toml").write_text(
        f'version = "1.0"\n\n[metadata]\nauthor_name = "agentmill synth"\ncategory = "synth"\n{meta}\n\n'
        f"[agent]\ntimeout_sec = 300.0\n\n[verifier]\ntimeout_sec = 120.0\n\n"
        f'[environment]\nkind = "tools"\n' + (f"gyms = [{gyms}]\n" if gyms else "")
    )
    if env.gym_dir is not None:
        shutil.copytree(env.gym_dir, dest / "environment" / "gym", ignore=shutil.ignore_patterns("__pycache__"))
    if b.seed_sql.strip():
        (dest / "environment" / "seed.sql").write_text(b.seed_sql.strip() + "\n")
    (dest / "tests" / "verifiers.json").write_text(json.dumps(b.verifiers, indent=1))
    calls = [c.model_dump() for c in b.calls]
    (dest / "solution" / "calls.json").write_text(
        json.dumps({"calls": calls, "answer": b.answer} if b.answer else calls, indent=1)
    )
    return dest
