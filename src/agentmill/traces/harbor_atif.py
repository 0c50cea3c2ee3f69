"""ATIF trajectories between Harbor and agentmill, losslessly.

agentmill models the ATIF fields it writes (atif.py, extra="forbid"); Harbor's agents may write more
(later ATIF versions, agent-specific keys). Reading, every key agentmill does not model is folded
into that object's `extra` under UNMODELLED; writing, it is unfolded back to where it was, so a
Harbor trajectory read and written again keeps its fields. Multimodal content (a list of parts) is
read as its text parts joined, the parts kept under UNMODELLED.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agentmill.traces.atif import AgentInfo, FinalMetrics, Metrics, Observation, ObservationResult, Step, ToolCall, Trajectory

UNMODELLED = "atif_unmodelled"

# where nested objects live: field -> (model, is a list)
_NESTED: dict[type[BaseModel], dict[str, tuple[type[BaseModel], bool]]] = {
    Trajectory: {"agent": (AgentInfo, False), "steps": (Step, True), "final_metrics": (FinalMetrics, False)},
    Step: {"tool_calls": (ToolCall, True), "observation": (Observation, False), "metrics": (Metrics, False)},
    Observation: {"results": (ObservationResult, True)},
}
_TEXT_FIELDS = {Step: "message", ObservationResult: "content"}


def trajectory_from_harbor(data: Any) -> Trajectory:
    """A Harbor ATIF document -> agentmill's Trajectory. Raises ValueError naming what is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"trajectory: expected a JSON object, got {type(data).__name__}")
    return Trajectory.model_validate(_fold(data, Trajectory, "trajectory"))


def trajectory_to_harbor(trajectory: Trajectory) -> dict:
    """agentmill's Trajectory -> the ATIF document Harbor reads (folded fields put back)."""
    return _unfold(trajectory.model_dump(mode="json", exclude_none=True), Trajectory)


def _fold(data: dict, model: type[BaseModel], where: str) -> dict:
    known, unknown = {}, {}
    for key, value in data.items():
        (known if key in model.model_fields else unknown)[key] = value
    for field, (sub, many) in _NESTED.get(model, {}).items():
        value = known.get(field)
        if value is None:
            continue
        if many:
            if not isinstance(value, list):
                raise ValueError(f"{where}.{field}: expected a list")
            known[field] = [_fold(_object(v, f"{where}.{field}[{i}]"), sub, f"{where}.{field}[{i}]") for i, v in enumerate(value)]
        else:
            known[field] = _fold(_object(value, f"{where}.{field}"), sub, f"{where}.{field}")
    text_field = _TEXT_FIELDS.get(model)
    if text_field and isinstance(known.get(text_field), list):  # content parts: keep the text, park the parts
        unknown[text_field] = known[text_field]
        known[text_field] = "\n".join(p.get("text", "") for p in known[text_field] if isinstance(p, dict) and p.get("type", "text") == "text")
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
        data.update(parked)
    return data
