"""The critic and the targeted repair.

The critic reads the candidate and the failed gate and names one of six diagnoses and the components
at fault. A critic reply that is not a diagnosis falls back to the gate's own hint (recorded as
`by = "gate"`), so a box never stalls on a confused critic. The repair asks the generator for new
versions of exactly those components; any other key in its reply refuses the repair.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentmill.models.client import ModelClient
from agentmill.synth.candidate import (
    COMPONENTS,
    CandidateBody,
    CandidateParseError,
    apply_repair,
    parse_partial,
    repair_schema,
)
from agentmill.synth.gates.base import CATEGORIES, Category, GateResult
from agentmill.synth.llm import JsonReply, ask_json, dumps
from agentmill.synth.prompt_files import load_prompt

# the critic's reply, asked for as constrained decoding where the endpoint supports it
CRITIC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["category", "components", "explanation"],
    "properties": {
        "category": {"type": "string", "enum": list(CATEGORIES)},
        "components": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": list(COMPONENTS)}},
        "explanation": {"type": "string"},
    },
}


class Diagnosis(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: Category
    components: list[str] = Field(min_length=1)
    explanation: str = ""
    by: Literal["critic", "gate"] = "critic"


def gate_diagnosis(result: GateResult, note: str = "") -> Diagnosis:
    return Diagnosis(
        category=result.category or "bad_task_composition",
        components=result.components or list(COMPONENTS[:6]),
        explanation=(f"{note} " if note else "") + f"{result.gate}: {result.code}: {result.message}"[:1500],
        by="gate",
    )


def failure_text(result: GateResult) -> str:
    details = {
        k: v
        for k, v in result.details.items()
        if k
        in (
            "rewards",
            "replay_errors",
            "mutants",
            "lints",
            "target_solves",
            "solver_solves",
            "k",
            "reason",
            "arbitrary_constraints",
            "entity",
            "verifier",
        )
    }
    return f"gate: {result.gate}\ncode: {result.code}\nmessage: {result.message}\ndetails: {dumps(details)}"


async def ask_critic(
    client: ModelClient, card_view: dict, body: CandidateBody, result: GateResult, prompts=None
) -> JsonReply:
    user = (
        f"Capability card:\n{dumps(card_view)}\n\nCandidate:\n{dumps(body.model_dump())}\n\n"
        f"Failed gate:\n{failure_text(result)}"
    )
    return await ask_json(client, load_prompt("critic", prompts), user, CRITIC_SCHEMA)


async def criticise(
    client: ModelClient, card_view: dict, body: CandidateBody, result: GateResult, prompts=None
) -> Diagnosis:
    return read_diagnosis(await ask_critic(client, card_view, body, result, prompts), result)


def read_diagnosis(reply: JsonReply, result: GateResult) -> Diagnosis:
    """The critic's diagnosis, or the gate's own hint when the reply is not one (or never came)."""
    d = reply.data if isinstance(reply.data, dict) else {}
    category, comps = d.get("category"), d.get("components")
    if category in CATEGORIES and isinstance(comps, list) and comps and all(c in COMPONENTS for c in comps):
        return Diagnosis(
            category=category, components=list(dict.fromkeys(comps)), explanation=str(d.get("explanation", ""))[:2000]
        )
    why = reply.error or f"not a diagnosis: {reply.text[:200]!r}"
    return gate_diagnosis(result, note=f"(critic reply unusable: {why})")


class RepairOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")
    body: CandidateBody | None
    changed: list[str] = Field(default_factory=list)
    error: str | None = None
    raw: str = ""
    endpoint_failed: bool = False  # the generator was down: not the candidate's fault


async def repair(
    client: ModelClient, card_view: dict, body: CandidateBody, diagnosis: Diagnosis, result: GateResult, prompts=None
) -> RepairOutcome:
    allowed = diagnosis.components
    user = (
        f"Capability card:\n{dumps(card_view)}\n\nCandidate:\n{dumps(body.model_dump())}\n\n"
        f"Failed gate:\n{failure_text(result)}\n\nDiagnosis: {diagnosis.category}: {diagnosis.explanation}\n\n"
        f"Return a JSON object with exactly these keys, each a corrected replacement: {', '.join(allowed)}"
    )
    reply = await ask_json(client, load_prompt("repair", prompts), user, repair_schema(allowed))
    if reply.data is None:
        return RepairOutcome(body=None, error=reply.error, raw=reply.text, endpoint_failed=reply.endpoint_failed)
    try:
        changes: dict[str, Any] = parse_partial(dumps(reply.data), allowed)
        return RepairOutcome(body=apply_repair(body, changes), changed=sorted(changes), raw=reply.text)
    except CandidateParseError as e:
        return RepairOutcome(body=None, error=str(e), raw=reply.text)
