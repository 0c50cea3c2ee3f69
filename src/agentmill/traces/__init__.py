"""Traces: trajectory schema (ATIF), text hygiene; telemetry, filters and exporters build on these."""

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

__all__ = ["AgentInfo", "FinalMetrics", "Metrics", "Observation", "ObservationResult", "Step", "ToolCall", "Trajectory"]
