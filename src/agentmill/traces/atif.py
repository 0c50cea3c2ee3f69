"""Trajectories in Harbor's Agent Trajectory Interchange Format (ATIF v1.4), one schema.

Only the fields agentmill writes are modelled; `extra` carries the rest, as the format intends.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "ATIF-v1.4"


class _Atif(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Atif):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # agentmill: "arguments_text" = the arguments' JSON text exactly as sent back to the model
    # (a model may write text that is not a JSON object; `arguments` is then empty)
    extra: dict[str, Any] | None = None


class ObservationResult(_Atif):
    """For agentmill's agents, `content` is exactly what the model was told: the next user message
    (text-protocol agents, wrapper included) or the `role: tool` message's content."""

    source_call_id: str | None = None
    content: str | None = None
    extra: dict[str, Any] | None = None


class Observation(_Atif):
    results: list[ObservationResult] = Field(default_factory=list)


class Metrics(_Atif):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] | None = None


class Step(_Atif):
    step_id: int
    timestamp: str = Field(default_factory=lambda: now_iso())
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    message: str = ""
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    extra: dict[str, Any] | None = None


class AgentInfo(_Atif):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None
    extra: dict[str, Any] | None = None


class Trajectory(_Atif):
    schema_version: str = SCHEMA_VERSION
    session_id: str
    agent: AgentInfo
    steps: list[Step] = Field(default_factory=list)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    extra: dict[str, Any] | None = None

    def summarize(self) -> Trajectory:
        """Fill final_metrics from the steps."""
        metrics = [s.metrics for s in self.steps if s.source == "agent" and s.metrics is not None]
        costs = [m.cost_usd for m in metrics if m.cost_usd is not None]
        self.final_metrics = FinalMetrics(
            total_prompt_tokens=sum(m.prompt_tokens or 0 for m in metrics),
            total_completion_tokens=sum(m.completion_tokens or 0 for m in metrics),
            total_cached_tokens=sum(m.cached_tokens or 0 for m in metrics),
            total_cost_usd=sum(costs) if costs else None,
            total_steps=len(self.steps),
            extra=(self.final_metrics.extra if self.final_metrics else None),
        )
        return self


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
