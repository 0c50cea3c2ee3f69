"""Trace filters: declarative, composable, reported as a funnel.

OpenThoughts-Agent's strongest single rule was a rollout filter: keep trajectories with at least 5
assistant turns. Every rule here is one field of `FilterSpec`, set from CLI flags or a TOML file
(`[filters]` table, same names), applied in a fixed order; each reports how many it kept and dropped.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentmill.errors import AgentmillError
from agentmill.traces.records import TraceRecord
from agentmill.traces.tokens import TokenCounter

DEFAULT_DROP = ["agent_error", "sandbox_error", "infra_error", "verifier_error", "verifier_timeout"]


class FilterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_turns: int | None = Field(5, ge=0, description="minimum assistant turns")
    drop_outcomes: list[str] = Field(default_factory=lambda: list(DEFAULT_DROP))
    reward: Literal["success", "failure", "any"] = "any"
    min_reward: float | None = None
    completion: Literal["claimed", "unclaimed", "any"] = "any"
    max_tokens: int | None = Field(None, gt=0, description="cutoff under the chat template")
    max_repeated_commands: int | None = Field(None, ge=0)
    max_error_rate: float | None = Field(None, ge=0, le=1)
    max_truncated: int | None = Field(None, ge=0)
    subagents: Literal["drop", "keep"] = "drop"

    @classmethod
    def from_toml(cls, path: Path) -> "FilterSpec":
        try:
            raw = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise AgentmillError(f"{path}: {e}") from None
        table = raw.get("filters", raw)
        try:
            return cls.model_validate(table)
        except ValidationError as e:
            err = e.errors()[0]
            raise AgentmillError(f"{path}: field '{'.'.join(map(str, err['loc']))}': {err['msg']}") from None

    def merged(self, **overrides) -> "FilterSpec":
        """This spec with the given (non-None) values replacing its own: flags override the file."""
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return FilterSpec.model_validate(data)


@dataclass
class FunnelStep:
    name: str
    description: str
    kept: int
    dropped: int


Rule = tuple[str, str, Callable[[TraceRecord], bool]]


def rules(spec: FilterSpec, counter: TokenCounter | None = None, render=None) -> list[Rule]:
    """The active rules, in order: (name, description, keep?)."""
    out: list[Rule] = []
    if spec.subagents == "drop":
        out.append(("subagents", "drop subagent traces", lambda r: not r.telemetry.is_subagent))
    if spec.drop_outcomes:
        drop = set(spec.drop_outcomes)
        out.append(("outcome", f"drop outcomes {', '.join(sorted(drop))}", lambda r: r.outcome not in drop))
    if spec.reward == "success":
        out.append(("reward", "keep successes (reward 1)", lambda r: r.outcome == "passed"))
    elif spec.reward == "failure":
        out.append(("reward", "keep failures", lambda r: r.outcome != "passed"))
    if spec.min_reward is not None:
        out.append(("min_reward", f"reward >= {spec.min_reward:g}", lambda r: r.reward is not None and r.reward >= spec.min_reward))
    if spec.completion != "any":
        want = spec.completion == "claimed"
        out.append(("completion", f"completion {spec.completion}", lambda r: r.telemetry.completion_claimed == want))
    if spec.min_turns:
        out.append(("min_turns", f">= {spec.min_turns} assistant turns", lambda r: r.telemetry.assistant_turns >= spec.min_turns))
    if spec.max_repeated_commands is not None:
        out.append(("repeated_commands", f"<= {spec.max_repeated_commands} repeated commands",
                    lambda r: r.telemetry.repeated_commands <= spec.max_repeated_commands))
    if spec.max_error_rate is not None:
        out.append(("error_rate", f"command error rate <= {spec.max_error_rate:g}",
                    lambda r: r.telemetry.error_rate <= spec.max_error_rate))
    if spec.max_truncated is not None:
        out.append(("truncation", f"<= {spec.max_truncated} truncated observations",
                    lambda r: r.telemetry.truncated_observations <= spec.max_truncated))
    if spec.max_tokens is not None:
        counter = counter or TokenCounter()
        if render is None:
            raise ValueError("max_tokens needs a renderer")

        def fits(r: TraceRecord) -> bool:
            messages, tools = render(r)
            return counter.count(messages, tools) <= spec.max_tokens

        out.append(("max_tokens", f"<= {spec.max_tokens} tokens ({counter.label})", fits))
    return out


def apply_filters(records: Iterable[TraceRecord], active: list[Rule]) -> tuple[list[TraceRecord], list[FunnelStep]]:
    """Records that pass every rule (with `passed_filters` filled) and the funnel, one step per rule."""
    kept = list(records)
    funnel = [FunnelStep("input", "finished trials", len(kept), 0)]
    for name, description, keep in active:
        before = len(kept)
        kept = [r for r in kept if keep(r)]
        for r in kept:
            r.passed_filters.append(name)
        funnel.append(FunnelStep(name, description, len(kept), before - len(kept)))
    return kept, funnel
