"""`check`'s audit of a tool task: dynamic lints and negative verification by mutation.

In one sandbox: build the task's state, keep a copy (the untouched state), replay the reference
calls (recording each call's errors and writes), keep the oracle's end state, then make wrong end
states from it and run every verifier on each:

  noop              nothing done (the untouched state)
  undo_last_write   every reference call but the last one that wrote
  change_field:...  one written field set to another value the database accepts
  wrong_record:...  the right change applied to a different record

Each wrong state must fail at least one verifier; a surviving mutant means a weak verifier. A
mutant identical to the oracle's end state (e.g. `noop` for a task whose right answer is to refuse)
is not wrong and is skipped. Lints: a query that errors on the untouched or the oracle's state, a
reference call that errors, a database verifier that passes on the untouched state and on every
mutant (vacuous: it distinguishes nothing the task changes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.envs.state import PYTHON, TOOLS_ROOT, prepare_tool_state, require_spec
from agentmill.envs.sandboxed import task_sandbox
from agentmill.images import ImageBuilder
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.traces.atif import Step, ToolCall
from agentmill.verify.judge import Judge, default_judge
from agentmill.verify.sql_state import (PRIVATE, Check, TrialView, evaluate, guest_json, queries_of, run_queries,
                                        stage_query_runner)
from agentmill.verify.tool_lints import Lint, static_lints

AUDIT = "/var/lib/agentmill/audit"


@dataclass
class Mutant:
    name: str
    description: str
    killed_by: list[str] = field(default_factory=list)  # verifiers that failed on it

    @property
    def survived(self) -> bool:
        return not self.killed_by

    def to_json(self) -> dict:
        return {"name": self.name, "description": self.description, "killed_by": self.killed_by,
                "survived": self.survived}


@dataclass
class ToolAudit:
    lints: list[Lint] = field(default_factory=list)
    mutants: list[Mutant] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # mutants equal to the oracle's state
    error: str | None = None  # the audit itself could not run

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if m.survived]

    def to_json(self) -> dict:
        return {"lints": [lint.to_json() for lint in self.lints], "mutants": [m.to_json() for m in self.mutants],
                "equivalent_mutants": self.skipped, "error": self.error}


async def audit_tool_task(task: Task, *, builder: ImageBuilder | None = None, judge: Judge | None = None) -> ToolAudit:
    audit = ToolAudit(lints=static_lints(task))
    spec = require_spec(task)
    if not spec.verifiers or spec.calls is None:
        return audit
    judge = judge if judge is not None else default_judge()
    try:
        async with task_sandbox(task, builder=builder) as sb:
            await _audit(task, sb, audit, judge)
    except Exception as e:  # noqa: BLE001 - the audit reports, never raises
        audit.error = f"{type(e).__name__}: {e}"
    return audit


async def _sh(sb: Sandbox, script: str) -> None:
    run = await sb.exec(["/bin/sh", "-c", script], timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"audit step failed: {script[:80]}: {run.output.strip()[-300:]}")


async def _replay(sb: Sandbox, task: Task, db_dir: str, calls: list[dict]) -> list[dict]:
    spec_path = await stage_query_runner(task, sb, db_dir=db_dir)
    reply = await guest_json(sb, [*PYTHON, f"{PRIVATE}/toolhost.py", "replay", spec_path], stdin={"calls": calls},
                             timeout=600, what="replaying the reference calls")
    return reply["results"]


async def _checks(task: Task, sb: Sandbox, db_dir: str, view: TrialView, judge) -> list[Check]:
    spec_path = await stage_query_runner(task, sb, db_dir=db_dir)
    return await evaluate(task, await run_queries(sb, spec_path, queries_of(task)), view, judge)


async def _state_hash(sb: Sandbox, task: Task, db_dir: str) -> str:
    """Content hash of every table of every gym, computed in the sandbox."""
    spec_path = await stage_query_runner(task, sb, db_dir=db_dir)
    reply = await guest_json(sb, [*PYTHON, f"{PRIVATE}/toolhost.py", "hash", spec_path], timeout=300,
                             what=f"hashing {db_dir}")
    return reply["hash"]


async def _audit(task: Task, sb: Sandbox, audit: ToolAudit, judge) -> None:
    spec = require_spec(task)
    gyms = [g.name for g in spec.gyms]
    await prepare_tool_state(task, sb)
    db = f"{TOOLS_ROOT}/db"
    initial, final = f"{AUDIT}/initial", f"{AUDIT}/final"
    await _sh(sb, f"mkdir -p {AUDIT} && cp -r {db} {initial} && cp -r {db} {final}")

    calls = [{"tool": c.tool, "arguments": dict(c.arguments)} for c in spec.calls]
    results = await _replay(sb, task, final, calls)
    for i, (call, res) in enumerate(zip(calls, results)):
        if res.get("is_error"):
            audit.lints.append(Lint("replay_error", f"reference call {i} ({call['tool']}) failed: {res.get('content', '')[:300]}"))
    steps = [Step(step_id=i + 1, source="agent", tool_calls=[ToolCall(tool_call_id=f"c{i}", function_name=c["tool"],
                                                                       arguments=c["arguments"])]) for i, c in enumerate(calls)]
    if spec.answer:
        steps.append(Step(step_id=len(steps) + 1, source="agent", message=spec.answer))
    view = TrialView.from_steps(steps)

    on_initial = await _checks(task, sb, initial, view, judge)
    on_final = await _checks(task, sb, final, view, judge)
    for state, checks in (("the untouched state", on_initial), ("the oracle's end state", on_final)):
        for c in checks:
            if c.error and "query failed" in c.error:
                audit.lints.append(Lint("query_error", f"on {state}: {c.error[:300]}", c.name))

    # the wrong end states
    states: list[tuple[str, str, str]] = [("noop", "nothing done: the untouched state", initial)]
    writes = [i for i, r in enumerate(results) if not r.get("is_error") and r.get("changes", 0) > 0]
    if writes:
        undo = f"{AUDIT}/undo_last_write"
        await _sh(sb, f"cp -r {initial} {undo}")
        kept = [c for i, c in enumerate(calls) if i != writes[-1]]
        await _replay(sb, task, undo, kept)
        states.append(("undo_last_write", f"all reference calls but #{writes[-1]} ({calls[writes[-1]]['tool']})", undo))
    request = {"gyms": gyms, "initial": initial, "final": final, "out": f"{AUDIT}/mutants",
               "ignore": list(task.config.metadata.get("mutation_ignore", [])),
               "argument_values": sorted({json.dumps(v) for c in calls for v in _scalars(c["arguments"])})}
    await sb.write_file(f"{PRIVATE}/mutants.py", (Path(__file__).resolve().parent.parent / "envs" / "guest" / "mutants.py").read_bytes())
    await sb.write_file(f"{PRIVATE}/mutants.json", json.dumps(request).encode())
    made = (await guest_json(sb, [*PYTHON, f"{PRIVATE}/mutants.py", f"{PRIVATE}/mutants.json"],
                             timeout=600, what="making mutants"))["mutants"]
    states += [(m["name"], m["description"], m["dir"]) for m in made]

    final_hash = await _state_hash(sb, task, final)
    passes_everywhere = {c.name for c in on_initial if c.passed and c.verifier_type == "database_state"}
    for name, description, path in states:
        if await _state_hash(sb, task, path) == final_hash:
            audit.skipped.append(name)
            continue
        checks = await _checks(task, sb, path, view, judge)
        audit.mutants.append(Mutant(name, description, [c.name for c in checks if c.passed is False]))
        passes_everywhere &= {c.name for c in checks if c.passed}
    if audit.mutants:
        for name in sorted(passes_everywhere):
            # a guard ("the other record stays untouched") passes on these states by design: reported, not a verdict
            audit.lints.append(Lint("vacuous_verifier", "passes on the untouched state and on every mutant", name,
                                    severity="warn"))


def _scalars(value):
    """Every scalar inside a call's arguments: the values the agent chose."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from _scalars(v)
    elif value is not None:
        yield value
