"""ATIF trajectories between Harbor and agentmill, losslessly.

agentmill models the ATIF fields it writes (atif.py, extra="forbid"); Harbor's agents may write more
(later ATIF versions, agent-specific keys). Reading, every key agentmill does not model is folded
into that object's `extra` under UNMODELLED; writing, it is unfolded back to where it was, so a
Harbor trajectory read and written again keeps its fields. Multimodal content (a list of parts) is
read as its text parts joined, the parts kept under UNMODELLED. Fields ATIF made optional that agentmill
requires (a trajectory's session_id since ATIF-v1.7, a step's timestamp) are filled in when absent and
listed under ABSENT, so writing leaves them out again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agentmill.traces.atif import (
    AgentInfo,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)

UNMODELLED = "atif_unmodelled"
ABSENT = "atif_absent"
# fields agentmill requires that an ATIF document may leave out: what stands in for them while read
_FILLED: dict[type[BaseModel], tuple[str, ...]] = {Trajectory: ("session_id",), Step: ("timestamp",)}

# where nested objects live: field -> (model, is a list)
_NESTED: dict[type[BaseModel], dict[str, tuple[type[BaseModel], bool]]] = {
    Trajectory: {"agent": (AgentInfo, False), "steps": (Step, True), "final_metrics": (FinalMetrics, False)},
    Step: {"tool_calls": (ToolCall, True), "observation": (Observation, False), "metrics": (Metrics, False)},
    Observation: {"results": (ObservationResult, True)},
}
_TEXT_FIELDS = {Step: "message", ObservationResult: "content"}


def trajectory_from_harbor(data: Any, *, session_id: str = "unnamed") -> Trajectory:
    """A Harbor ATIF document -> agentmill's Trajectory (`session_id` stands in for a document without one).
    Raises ValueError naming what is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"trajectory: expected a JSON object, got {type(data).__name__}")
    folded = _fold(data, Trajectory, "trajectory")
    if ABSENT in ((folded.get("extra") or {}).get(UNMODELLED) or {}):
        folded["session_id"] = session_id
    return Trajectory.model_validate(folded)


def trajectory_to_harbor(trajectory: Trajectory) -> dict:
    """agentmill's Trajectory -> the ATIF document Harbor reads (folded fields put back)."""
    return _unfold(trajectory.model_dump(mode="json", exclude_none=True), Trajectory)


def _fold(data: dict, model: type[BaseModel], where: str) -> dict:
    known: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for key, value in data.items():
        (known if key in model.model_fields else unknown)[key] = value
    for field, (sub, many) in _NESTED.get(model, {}).items():
        value = known.get(field)
        if value is None:
            continue
        if many:
            if not isinstance(value, list):
                raise ValueError(f"{where}.{field}: expected a list")
            known[field] = [
                _fold(_object(v, f"{where}.{field}[{i}]"), sub, f"{where}.{field}[{i}]") for i, v in enumerate(value)
            ]
        else:
            known[field] = _fold(_object(value, f"{where}.{field}"), sub, f"{where}.{field}")
    absent = [f for f in _FILLED.get(model, ()) if known.get(f) is None]
    for f in absent:  # left for the model's default (a step's timestamp) or filled by the caller (session_id)
        known.pop(f, None)
    if absent:
        unknown[ABSENT] = absent
    text_field = _TEXT_FIELDS.get(model)
    if text_field and isinstance(known.get(text_field), list):  # content parts: keep the text, park the parts
        unknown[text_field] = known[text_field]
        known[text_field] = "\n".join(
            p.get("text", "") for p in known[text_field] if isinstance(p, dict) and p.get("type", "text") == "text"
        )
    if unknown:
        if "extra" not in model.model_fields:
            return known  # nowhere to keep them (ATIF's observation holds only results)
        extra = known.get("extra") or {}
        if not isinstance(extra, dict):
            raise ValueError(f"{where}.extra: expected an object")
        known["extra"] = {**extra, UNMODELLED: unknown}
    return known


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _unfold(data: dict, model: type[BaseModel]) -> dict:
    for field, (sub, many) in _NESTED.get(model, {}).items():
        if field in data:
            data[field] = [_unfold(v, sub) for v in data[field]] if many else _unfold(data[field], sub)
    extra = data.get("extra")
    if isinstance(extra, dict) and UNMODELLED in extra:
        parked = extra.pop(UNMODELLED)
        if not extra:
            del data["extra"]
        for f in parked.pop(ABSENT, []):
            data.pop(f, None)
        data.update(parked)
    return data
