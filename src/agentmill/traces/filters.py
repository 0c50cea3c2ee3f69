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

# unjudged: a judged check never ran, so the trial is neither a known success nor a known failure
DEFAULT_DROP = ["agent_error", "sandbox_error", "infra_error", "verifier_error", "verifier_timeout", "unjudged"]


class FilterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_turns: int | None = Field(
        5,
        ge=0,
        description="minimum assistant turns; unless set, 2 for a model-driven "
        "tool-calling agent's traces (they are short)",
    )
    drop_outcomes: list[str] = Field(default_factory=lambda: list(DEFAULT_DROP))
    reward: Literal["success", "failure", "any"] = "any"
    min_reward: float | None = None
    completion: Literal["claimed", "unclaimed", "any"] = "any"
    max_tokens: int | None = Field(None, gt=0, description="cutoff under the chat template")
    max_repeated_commands: int | None = Field(None, ge=0)
    max_error_rate: float | None = Field(None, ge=0, le=1)
    max_truncated: int | None = Field(None, ge=0)
    subagents: Literal["drop", "keep"] = "drop"
    tamper: Literal["drop", "keep"] = Field("drop", description="trials with verifier tamper evidence")

    @classmethod
    def from_toml(cls, path: Path) -> FilterSpec:
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

    def merged(self, **overrides) -> FilterSpec:
        """This spec with the given (non-None) values replacing its own: flags override the file."""
        data = self.model_dump(exclude_unset=True)  # defaults stay defaults: min_turns' fits the agent
        data.update({k: v for k, v in overrides.items() if v is not None})
        return FilterSpec.model_validate(data)


@dataclass
class FunnelStep:
    name: str
    description: str
    kept: int
    dropped: int


Rule = tuple[str, str, Callable[[TraceRecord], bool]]


# Rules about the length of a trajectory: they say nothing about a task's prompt, so prompt-only
# exports (rl) do not apply them.
TRACE_LENGTH_RULES = frozenset({"min_turns", "max_tokens"})


# A tool-calling agent's trace is short: a few calls and an answer (3-4 assistant turns), where a
# terminal agent needs many. The default of 5 would drop every tool trace; unless min_turns is set,
# a model-driven tool-calling agent's trace needs only this many (a call, then the answer).
TOOL_MIN_TURNS = 2


def default_min_turns(record: TraceRecord, default: int) -> int:
    from agentmill.agents.registry import agent_class

    try:
        cls = agent_class(record.trial.get("agent") or "")
    except Exception:  # noqa: BLE001 - an agent this install does not know (an imported run): the general default
        return default
    return TOOL_MIN_TURNS if cls.needs_model and getattr(cls, "rendering", None) == "tool_calls" else default


def rules(
    spec: FilterSpec, counter: TokenCounter | None = None, render=None, *, prompt_rows: bool = False
) -> list[Rule]:
    """The active rules, in order: (name, description, keep?). `prompt_rows`: leave out trace-length rules."""
    if prompt_rows:
        spec = spec.model_copy(update={"min_turns": None, "max_tokens": None})
    out: list[Rule] = []
    if spec.tamper == "drop":
        out.append(("tamper", "drop trials with tamper evidence", lambda r: not _tampered(r)))
    if spec.subagents == "drop":
        out.append(("subagents", "drop subagent traces", lambda r: not r.telemetry.is_subagent))
    if spec.drop_outcomes:
        drop = set(spec.drop_outcomes)
        out.append(("outcome", f"drop outcomes {', '.join(sorted(drop))}", lambda r: r.outcome not in drop))
    if spec.reward == "success":
        out.append(("reward", "keep successes (reward 1)", lambda r: r.outcome == "passed"))
    elif spec.reward == "failure":
        out.append(("reward", "keep failures", lambda r: r.outcome != "passed"))
    if (min_reward := spec.min_reward) is not None:
        out.append(
            (
                "min_reward",
                f"reward >= {min_reward:g}",
                lambda r: r.reward is not None and r.reward >= min_reward,
            )
        )
    if spec.completion != "any":
        want = spec.completion == "claimed"
        out.append(("completion", f"completion {spec.completion}", lambda r: r.telemetry.completion_claimed == want))
    min_turns = spec.min_turns
    if min_turns and "min_turns" not in spec.model_fields_set:  # the default fits the agent
        out.append(
            (
                "min_turns",
                f">= {min_turns} assistant turns, {TOOL_MIN_TURNS} for tool-calling agents",
                lambda r: r.telemetry.assistant_turns >= default_min_turns(r, min_turns),
            )
        )
    elif min_turns:
        out.append(
            (
                "min_turns",
                f">= {min_turns} assistant turns",
                lambda r: r.telemetry.assistant_turns >= min_turns,
            )
        )
    if (max_repeated := spec.max_repeated_commands) is not None:
        out.append(
            (
                "repeated_commands",
                f"<= {max_repeated} repeated commands",
                lambda r: r.telemetry.repeated_commands <= max_repeated,
            )
        )
    if (max_error_rate := spec.max_error_rate) is not None:
        out.append(
            (
                "error_rate",
                f"command error rate <= {max_error_rate:g}",
                lambda r: r.telemetry.error_rate <= max_error_rate,
            )
        )
    if (max_truncated := spec.max_truncated) is not None:
        out.append(
            (
                "truncation",
                f"<= {max_truncated} truncated observations",
                lambda r: r.telemetry.truncated_observations <= max_truncated,
            )
        )
    if (max_tokens := spec.max_tokens) is not None:
        counter = counter or TokenCounter()
        if render is None:
            raise ValueError("max_tokens needs a renderer")

        def fits(r: TraceRecord) -> bool:
            messages, tools = render(r)
            return counter.count(messages, tools) <= max_tokens

        out.append(("max_tokens", f"<= {max_tokens} tokens ({counter.label})", fits))
    return out


class Funnel:
    """The rules applied one record at a time (streaming), with the funnel counted as records pass."""

    def __init__(self, active: list[Rule]):
        self.active = active
        self.seen = 0
        self.kept = [0] * len(active)  # records that passed rule i (and every rule before it)

    def admit(self, record: TraceRecord) -> str | None:
        """None if the record passes every rule (its `passed_filters` filled), else the first rule it fails."""
        passed = self.passes(record)
        self.count(passed)
        return self.active[passed][0] if passed < len(self.active) else None

    def passes(self, record: TraceRecord) -> int:
        """How many rules the record passes before the first it fails (all: len(active)); `passed_filters`
        filled. Not counted: a worker process judges, the funnel that writes counts (`count`)."""
        for i, (name, _description, keep) in enumerate(self.active):
            if not keep(record):
                return i
            record.passed_filters.append(name)
        return len(self.active)

    def count(self, passed: int) -> None:
        """Count one record that passed the first `passed` rules."""
        self.seen += 1
        for i in range(passed):
            self.kept[i] += 1

    def steps(self) -> list[FunnelStep]:
        out = [FunnelStep("input", "finished trials", self.seen, 0)]
        before = self.seen
        for (name, description, _keep), kept in zip(self.active, self.kept):
            out.append(FunnelStep(name, description, kept, before - kept))
            before = kept
        return out


def _tampered(r: TraceRecord) -> bool:
    # result.json is the record; telemetry may predate the field
    return bool(r.result.get("tamper")) or r.telemetry.tamper > 0


def apply_filters(records: Iterable[TraceRecord], active: list[Rule]) -> tuple[list[TraceRecord], list[FunnelStep]]:
    """Records that pass every rule (with `passed_filters` filled) and the funnel, one step per rule."""
    funnel = Funnel(active)
    kept = [r for r in records if funnel.admit(r) is None]
    return kept, funnel.steps()


def emptied_by(funnel: list[FunnelStep]) -> FunnelStep | None:
    """The rule that removed the last records (None when there were none to begin with)."""
    return next((s for s in funnel[1:] if s.kept == 0 and s.dropped > 0), None)


# How to keep more records when a rule removes them all: (with `agentmill export` flags, in a recipe).
RELAX = {
    "tamper": (
        "pass --tamper keep, only on purpose (these trials carry tamper evidence)",
        'set [trace_filters] tamper = "keep" only on purpose (these trials carry tamper evidence)',
    ),
    "subagents": ("pass --subagents keep", 'set [trace_filters] subagents = "keep"'),
    "outcome": (
        "pass --keep-all-outcomes or fewer --drop-outcome",
        "drop fewer outcomes in [trace_filters] drop_outcomes",
    ),
    "reward": ("pass --reward any", 'set [trace_filters] reward = "any"'),
    "min_reward": ("lower --min-reward", "lower [trace_filters] min_reward"),
    "completion": ("pass --completion any", 'set [trace_filters] completion = "any"'),
    "min_turns": ("lower --min-turns (0 disables the rule)", "lower [trace_filters] min_turns (0 disables the rule)"),
    "repeated_commands": ("raise --max-repeated-commands", "raise [trace_filters] max_repeated_commands"),
    "error_rate": ("raise --max-error-rate", "raise [trace_filters] max_error_rate"),
    "truncation": ("raise --max-truncated", "raise [trace_filters] max_truncated"),
    "max_tokens": ("raise --max-tokens", "raise [trace_filters] max_tokens"),
}


def relax_hint(rule: str, *, recipe: bool = False) -> str:
    """What to change so that `rule` keeps more traces."""
    flag, key = RELAX.get(rule, (f"change the {rule} rule's setting", f"change the {rule} setting in [trace_filters]"))
    return key if recipe else flag
