"""Telemetry of one trajectory, computed once when the trial finishes and stored beside it.

These are the behaviour signals OpenThoughts-Agent tracks (turns, tokens, tool calls and errors,
self-corrections, premature completion) and the inputs of the trace filters.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from agentmill.traces.atif import Step, Trajectory

# Signs in a command's output that it failed. Terminal agents see no exit codes, so the screen is
# the evidence; the patterns are the shells' and runtimes' own wording.
_ERROR = re.compile(
    r"command not found|No such file or directory|Permission denied|syntax error|Traceback \(most recent call last\)"
    r"|^\w*Error: |error: |fatal: |cannot access|Segmentation fault|Killed$|not a git repository|unrecognized option",
    re.MULTILINE,
)
_TRUNCATED = re.compile(r"\[\.\.\. \d+ characters omitted \.\.\.\]")


class Telemetry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    assistant_turns: int = 0
    assistant_tokens: int = 0  # completion tokens as the endpoint counted them
    reasoning_chars: int = 0
    reasoning_steps: int = 0
    commands: int = 0
    command_errors: int = 0
    parse_errors: int = 0
    tool_errors: int = 0  # tool calls answered with an error: unknown tool, bad arguments, a failing tool
    truncated_observations: int = 0
    timed_out: bool = False  # the agent or the verifier ran out of time
    completion_claimed: bool = False
    premature_completion: bool = False  # claimed complete, but the verifier says no
    self_corrections: int = 0  # a failed command followed by a changed retry
    repeated_commands: int = 0  # commands identical to one already run in this trajectory
    max_repeat_run: int = 0  # longest run of consecutive identical commands
    is_subagent: bool = False
    tamper: int = 0  # tamper evidence the verifier recorded (see verify/tamper.py)
    tamper_kinds: list[str] = []

    @property
    def error_rate(self) -> float:
        return self.command_errors / self.commands if self.commands else 0.0


def compute_telemetry(trajectory: Trajectory, result: dict) -> Telemetry:
    t = Telemetry(is_subagent=bool((trajectory.extra or {}).get("parent_session_id")))
    agent_steps = [s for s in trajectory.steps if s.source == "agent"]
    t.assistant_turns = len(agent_steps)
    seen: Counter[str] = Counter()
    previous: list[str] = []
    previous_failed = False
    run = best = 0
    last_command = None
    for step in agent_steps:
        if step.metrics and step.metrics.completion_tokens:
            t.assistant_tokens += step.metrics.completion_tokens
        if step.reasoning_content:
            t.reasoning_chars += len(step.reasoning_content)
            t.reasoning_steps += 1
        if step.extra and step.extra.get("parse_error"):
            t.parse_errors += 1
        step_tool_errors = int((step.extra or {}).get("tool_errors") or 0)
        t.tool_errors += step_tool_errors
        output = _observation_text(step)
        if _TRUNCATED.search(output):
            t.truncated_observations += 1
        commands = _commands(step)
        failed = bool(commands) and (step_tool_errors > 0 or bool(_ERROR.search(output)))
        for cmd in commands:
            t.commands += 1
            key = cmd.strip()
            if seen[key]:
                t.repeated_commands += 1
            seen[key] += 1
            run = run + 1 if key == last_command else 1
            best = max(best, run)
            last_command = key
        if failed:
            t.command_errors += 1
        if previous_failed and commands and [c.strip() for c in commands] != [c.strip() for c in previous]:
            t.self_corrections += 1
        previous_failed, previous = failed, commands or previous
    t.max_repeat_run = best
    meta = (result.get("agent_metadata") or {}).get("terminus", {})
    t.completion_claimed = bool(meta.get("completed"))
    t.premature_completion = t.completion_claimed and result.get("outcome") != "passed"
    t.timed_out = result.get("outcome") in {"agent_timeout", "verifier_timeout"}
    evidence = result.get("tamper") or []
    t.tamper = len(evidence)
    t.tamper_kinds = sorted({str(e.get("kind")) for e in evidence if isinstance(e, dict)})
    return t


def _commands(step: Step) -> list[str]:
    out = []
    for call in step.tool_calls or []:
        args = call.arguments or {}
        text = args.get("keystrokes", args.get("command"))
        if "keystrokes" not in args and "command" not in args:  # a function call: its name and arguments
            text = f"{call.function_name}({json.dumps(args, sort_keys=True, ensure_ascii=False)})"
        if isinstance(text, str) and text.strip():
            out.append(text)
    return out


def _observation_text(step: Step) -> str:
    if step.observation is None:
        return ""
    return "\n".join(r.content or "" for r in step.observation.results)


SUMMED = (
    "assistant_turns",
    "assistant_tokens",
    "commands",
    "command_errors",
    "parse_errors",
    "truncated_observations",
    "timed_out",
    "completion_claimed",
    "premature_completion",
    "self_corrections",
    "repeated_commands",
)


def aggregate(telemetries: Iterable[Telemetry]) -> dict:
    """Run-level means and rates for `agentmill status`, folded one trial at a time (a large run's
    telemetry is never held whole)."""
    n = tampered = 0
    sums = dict.fromkeys(SUMMED, 0)
    for t in telemetries:
        n += 1
        tampered += 1 if t.tamper else 0
        for attr in SUMMED:
            sums[attr] += getattr(t, attr)
    if not n:
        return {}
    commands = sums["commands"]
    return {
        "trajectories": n,
        "mean_assistant_turns": sums["assistant_turns"] / n,
        "mean_assistant_tokens": sums["assistant_tokens"] / n,
        "mean_commands": commands / n,
        "command_error_rate": sums["command_errors"] / commands if commands else 0.0,
        "parse_errors": sums["parse_errors"],
        "truncated_observations": sums["truncated_observations"],
        "timed_out": sums["timed_out"],
        "completion_claimed": sums["completion_claimed"],
        "premature_completion": sums["premature_completion"],
        "self_corrections": sums["self_corrections"],
        "repeated_commands": sums["repeated_commands"],
        "tampered": tampered,
    }
