"""Tool-task verification: EnterpriseOps-Gym verifiers over the final databases.

`database_state` runs its query read-only inside a fresh sandbox over the trial's final root
filesystem, extracts a value the way EnterpriseOps-Gym does (one row of one column: the value; one
row: the row object; several rows: the list of rows; none: the empty list) and compares it with
Python's `==`, `>`, `<`, or `expected in str(actual)` for `contains`. `response_check` asks an LLM
judge (verify/judge.py) to score the agent's final answer (or, `subject = "query_result"`, text it
wrote into the database), shown with its tool calls, against a query's result (score >=
`minimum_comparison_value` passes). `tool_execution` checks the calls in the trajectory. The reward
is 1 only if every verifier passes; reward.json gets one entry per verifier plus `reward`. Without a
judge, a trial whose other checks all pass is `unjudged`: no reward, never `passed`.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentmill.errors import SandboxError
from agentmill.sandbox.protocol import Sandbox
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks.model import Task
from agentmill.tasks.tool_spec import DatabaseStateVerifier, ResponseCheckVerifier, ToolExecutionVerifier
from agentmill.tools.state import (
    PYTHON,
    TOOLS_ROOT,
    ToolEnvError,
    guest_json,
    gym_db,
    require_spec,
    sandbox_spec,
    toolhost_source,
)
from agentmill.traces.atif import Step
from agentmill.verify import state_diff
from agentmill.verify.call_log import read_calls
from agentmill.verify.judge import NEEDS_JUDGE, Judge, JudgeError, default_judge
from agentmill.verify.outcome import Outcome
from agentmill.verify.staging import stage

PRIVATE = "/tmp/agentmill-verify"  # the verifier sandbox's private tmpfs: nothing the agent wrote
_QUERY_TIMEOUT = 120.0


@dataclass
class Check:
    """One verifier's verdict. `passed` None: not evaluated (a response_check without a judge)."""

    name: str
    verifier_type: str
    passed: bool | None
    expected: Any = None
    actual: Any = None
    error: str | None = None
    details: str | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None or k == "passed"}


@dataclass
class TrialView:
    """What the verifiers read from the agent's side: its tool calls and its final answer."""

    tools_called: list[str] = field(default_factory=list)
    final_answer: str = ""
    # every call with its arguments and what came back, for the judge (refused and failed ones too)
    calls: list[dict] = field(default_factory=list)

    @classmethod
    def from_steps(cls, steps: list[Step]) -> TrialView:
        called = [c.function_name for s in steps if s.source == "agent" for c in (s.tool_calls or [])]
        answer = ""
        for s in reversed(steps):
            if s.source == "agent" and not s.tool_calls and s.message.strip():
                answer = s.message
                break
        return cls(tools_called=called, final_answer=answer, calls=_calls_of(steps))


# per call shown to the judge: the gist of a listing, all of an error. Every call is shown (none
# dropped: a forbidden call hidden among many would be the policy's way past the judge), each cut
_RESULT_CHARS = 2000
_ANSWER_CHARS = 20000
_ROWS = 200  # of a check's query: a judge reads facts, not a table dump


def _calls_of(steps: list[Step]) -> list[dict]:
    out = []
    for s in steps:
        if s.source != "agent":
            continue
        results = {r.source_call_id: r.content for r in (s.observation.results if s.observation else [])}
        for c in s.tool_calls or []:
            result = results.get(c.tool_call_id)
            arguments = c.arguments
            text = json.dumps(arguments, default=str)
            out.append(
                {
                    "tool": c.function_name,
                    "arguments": arguments if len(text) <= _RESULT_CHARS else text[:_RESULT_CHARS] + " [cut]",
                    "result": None if result is None else result[:_RESULT_CHARS],
                }
            )
    return out


# -- EnterpriseOps-Gym semantics ---------------------------------------------------------------------


def extract_value(rows: list[dict]) -> Any:
    if len(rows) == 1:
        return next(iter(rows[0].values())) if len(rows[0]) == 1 else rows[0]
    return rows


def compare(actual: Any, expected: Any, comparison_type: str) -> tuple[bool, str]:
    try:
        if comparison_type == "equals":
            passed = actual == expected
        elif comparison_type == "greater_than":
            passed = actual > expected
        elif comparison_type == "less_than":
            passed = actual < expected
        elif comparison_type == "contains":
            passed = str(expected) in str(actual)
        else:
            return False, f"unknown comparison type {comparison_type!r}"
    except TypeError as e:
        return False, f"cannot compare {comparison_type}: {e}"
    return bool(passed), f"{comparison_type}: {_short(actual)} vs {_short(expected)}"


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


# -- running queries in a sandbox --------------------------------------------------------------------


async def stage_query_runner(task: Task, sandbox: Sandbox, *, db_dir: str | None = None) -> str:
    """Write the tool host and a spec (DBs under `db_dir`, default the trial's) to the private tmpfs."""
    spec = sandbox_spec(require_spec(task))
    if db_dir is not None:
        for g in spec["gyms"]:
            g["db"] = f"{db_dir}/{g['name']}.sqlite"
    tag = db_dir.strip("/").replace("/", "_") if db_dir else "trial"
    await sandbox.write_file(f"{PRIVATE}/toolhost.py", toolhost_source())
    await sandbox.write_file(f"{PRIVATE}/spec-{tag}.json", json.dumps(spec).encode())
    return f"{PRIVATE}/spec-{tag}.json"


async def run_queries(sandbox: Sandbox, spec_path: str, queries: list[dict]) -> list[dict]:
    """[{sql, gym}] -> [{rows} | {error}], read-only, inside the sandbox."""
    if not queries:
        return []
    reply = await guest_json(
        sandbox,
        [*PYTHON, f"{PRIVATE}/toolhost.py", "query", spec_path],
        stdin={"queries": queries},
        timeout=_QUERY_TIMEOUT,
        what="the query runner",
    )
    return reply["results"]


def queries_of(task: Task) -> list[dict]:
    """The SQL each verifier needs, in verifier order (None for tool_execution)."""
    out = []
    for v in require_spec(task).verifiers:
        if isinstance(v, DatabaseStateVerifier):
            out.append({"sql": v.validation_config.query, "gym": v.gym_name})
        elif isinstance(v, ResponseCheckVerifier):
            out.append({"sql": v.validation_config.sql_query, "gym": v.gym_name})
    return out


async def evaluate(task: Task, results: list[dict], view: TrialView, judge: Judge | None) -> list[Check]:
    """Every verifier's verdict, given the query results (in `queries_of` order)."""
    checks: list[Check] = []
    it = iter(results)
    for v in require_spec(task).verifiers:
        if isinstance(v, DatabaseStateVerifier):
            res, cfg = next(it), v.validation_config
            if "error" in res:
                checks.append(
                    Check(v.name, v.verifier_type, False, cfg.expected_value, error=f"query failed: {res['error']}")
                )
                continue
            actual = extract_value(res["rows"])
            passed, details = compare(actual, cfg.expected_value, cfg.comparison_type)
            checks.append(Check(v.name, v.verifier_type, passed, cfg.expected_value, actual, details=details))
        elif isinstance(v, ResponseCheckVerifier):
            checks.append(await _response_check(v, next(it), view, judge))
        elif isinstance(v, ToolExecutionVerifier):
            tool_cfg = v.validation_config
            missing = [t for t in tool_cfg.selected_tools if t not in view.tools_called]
            passed = not missing and len(view.tools_called) >= tool_cfg.minimum_tool_calls
            checks.append(
                Check(
                    v.name,
                    v.verifier_type,
                    passed,
                    expected=tool_cfg.model_dump(),
                    actual=view.tools_called,
                    details=f"missing: {missing}" if missing else f"{len(view.tools_called)} calls",
                )
            )
    return checks


async def _response_check(v: ResponseCheckVerifier, res: dict, view: TrialView, judge: Judge | None) -> Check:
    cfg = v.validation_config
    if "error" in res:
        return Check(v.name, v.verifier_type, False, error=f"query failed: {res['error']}")
    if cfg.subject == "final_answer" and not view.final_answer.strip():  # nothing to judge: no judge needed to fail it
        return Check(v.name, v.verifier_type, False, details="the agent gave no final answer")
    if cfg.subject == "query_result" and not res["rows"]:
        return Check(v.name, v.verifier_type, False, details="the query found no text to judge")
    if judge is None:
        return Check(v.name, v.verifier_type, None, details=f"not evaluated: {NEEDS_JUDGE}")
    rows = res["rows"][:_ROWS] + ([{"rows_not_shown": len(res["rows"]) - _ROWS}] if len(res["rows"]) > _ROWS else [])
    if cfg.subject == "query_result":
        data = {"text_to_judge": rows, "tool_calls": view.calls}
    else:
        data = {"database": rows, "final_answer": view.final_answer[:_ANSWER_CHARS], "tool_calls": view.calls}
    try:
        score, reasoning = await judge.score(cfg.comparison_prompt, data)
    except JudgeError as e:
        return Check(v.name, v.verifier_type, False, error=f"judge failed: {e}")
    return Check(
        v.name,
        v.verifier_type,
        score >= cfg.minimum_comparison_value,
        cfg.minimum_comparison_value,
        score,
        details=reasoning,
    )


def rewards_of(checks: list[Check]) -> tuple[float | None, dict[str, float]]:
    """Reward 1 only if every check ran and passed; None (no reward) when a check did not run and
    none of those that ran failed: what the judge would have said is unknown, never a pass."""
    counted = [c for c in checks if c.passed is not None]
    rewards = {c.name: 1.0 if c.passed else 0.0 for c in counted}
    if len(counted) < len(checks) and all(c.passed for c in counted):  # also when no check could run
        return None, rewards
    reward = 1.0 if counted and all(c.passed for c in counted) else 0.0
    return reward, {**rewards, "reward": reward}


def outcome_of(checks: list[Check], reward: float | None) -> tuple[Outcome, str | None]:
    """Query and judge failures are the verifier's fault, never the agent's."""
    broken = [c for c in checks if c.error]
    if broken:
        return Outcome.VERIFIER_ERROR, "; ".join(f"{c.name}: {c.error}" for c in broken)[:2000]
    if not checks:
        return Outcome.VERIFIER_ERROR, "tests/verifiers.json has no verifiers"
    if reward is None:
        names = ", ".join(c.name for c in checks if c.passed is None)
        return Outcome.UNJUDGED, f"{names}: {NEEDS_JUDGE}; every other check passed"
    return (Outcome.PASSED if reward >= 1.0 - 1e-9 else Outcome.FAILED), None


# -- the trial's verifier ----------------------------------------------------------------------------


async def _state_checks(task: Task, sb: Sandbox, spec_path: str) -> tuple[list[dict], Check | None, list[str]]:
    """The verifiers' query results, the default 'nothing else changed' check (verify/state_diff.py;
    None without reference calls) and the successful calls the tool host recorded."""
    results = await run_queries(sb, spec_path, queries_of(task))
    unchanged = None
    if state_diff.applies(task):
        reply = await state_diff.diff_states(task, sb, {"final": f"{TOOLS_ROOT}/db"})
        passed, details = state_diff.verdict(reply["violations"]["final"])
        unchanged = Check(state_diff.NAME, state_diff.VERIFIER_TYPE, passed, details=details)
    return results, unchanged, await read_calls(require_spec(task), sb)


def _host_folders(task: Task, scratch: Path) -> tuple[Path, Path]:
    """The verifier's logs folder and staged tests: file-system work, so one hop off the event loop."""
    logs = scratch / "verifier-logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs, stage(task.tests_sources, scratch / "tests")


async def verify_tool_task(
    task: Task, image, rootfs: Path, scratch: Path, limits, steps: list[Step], *, judge: Judge | None = None
):
    """The tool-task counterpart of test_script.verify: same inputs, same VerifierResult."""
    from agentmill.verify.test_script import VerifierResult

    started = time.monotonic()
    judge = judge if judge is not None else default_judge()
    logs, tests = await asyncio.to_thread(_host_folders, task, scratch)
    spec = image.spec(rootfs, limits=limits, ro_mounts={"/tests": tests}, rw_mounts={"/logs/verifier": logs})
    try:
        async with create_sandbox(spec) as sb:
            missing = await sb.exec(["test", "-f", gym_db(require_spec(task).gyms[0].name)], timeout=30)
            if missing.returncode != 0:
                return VerifierResult(
                    Outcome.VERIFIER_ERROR,
                    error=f"no tool state under {TOOLS_ROOT}: the environment was never prepared",
                    seconds=time.monotonic() - started,
                )
            spec_path = await stage_query_runner(task, sb)
            results, unchanged, called = await asyncio.wait_for(
                _state_checks(task, sb, spec_path), task.config.verifier.timeout_sec
            )
    except (TimeoutError, SandboxError, ToolEnvError) as e:
        outcome = (
            Outcome.VERIFIER_TIMEOUT
            if isinstance(e, asyncio.TimeoutError)
            else Outcome.SANDBOX_ERROR
            if isinstance(e, SandboxError)
            else Outcome.VERIFIER_ERROR
        )
        return VerifierResult(outcome, error=str(e) or "verifier timed out", seconds=time.monotonic() - started)
    view = TrialView.from_steps(steps)
    view.tools_called = called  # the tool host's record of successful calls, not the agent's account
    checks = await evaluate(task, results, view, judge) + ([unchanged] if unchanged else [])
    reward, rewards = rewards_of(checks)
    outcome, error = outcome_of(checks, reward)
    report = json.dumps({"reward": reward, "verifiers": [c.to_json() for c in checks]}, indent=1, default=str)
    (logs / "reward.json").write_text(json.dumps(rewards, indent=1))
    (logs / "verifiers.json").write_text(report)
    return VerifierResult(
        outcome,
        reward=reward if outcome is not Outcome.VERIFIER_ERROR else None,
        rewards=rewards,
        stdout=report,
        error=error,
        seconds=time.monotonic() - started,
    )
