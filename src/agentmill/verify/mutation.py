"""`check`'s audit of a tool task: dynamic lints and negative verification by mutation.

In one sandbox: build the task's state, keep a copy (the untouched state), replay the reference
calls (recording each call's errors and writes), keep the oracle's end state, then make wrong end
states from it and judge each the way a trial is judged: every verifier, and the default 'nothing
else changed' check (verify/state_diff.py) every tool task gets:

  noop              nothing done (the untouched state)
  undo_last_write   every reference call but the last one that wrote
  change_field:...  one written field set to another value its domain allows (every such value)
  wrong_record:...  the right change applied to a different record
  extra_write:...   the right change plus a write to a record the reference left alone
  extra_row:...     the right change plus a junk copy of a new row

Each wrong state must fail; a surviving mutant means a weak verifier. A mutant identical to the
oracle's end state (e.g. `noop` for a task whose right answer is to refuse) is not wrong and is
skipped. A surviving change to a field the reference's tool set on its own (no reference call chose
the value: assign also moving a ticket to in_progress) is the tool's side effect, not the task's
intent: reported as a `side_effect_unchecked` warning, not a weak verifier. Lints: a query that
errors on the untouched or the oracle's state, a reference call that errors, a database verifier
that passes on every state tried, scrambled and empty databases included (`vacuous_verifier`, an
error: it checks nothing), or only on the untouched state and every mutant (`guard_verifier`, a
warning: a guard such as "the other record stays untouched").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.images import ImageBuilder
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.tools.sandboxed import task_sandbox
from agentmill.tools.state import PYTHON, TOOLS_ROOT, prepare_tool_state, require_spec
from agentmill.traces.atif import Step, ToolCall
from agentmill.verify import state_diff
from agentmill.verify.judge import Judge, default_judge
from agentmill.verify.sql_state import (
    PRIVATE,
    Check,
    TrialView,
    evaluate,
    guest_json,
    queries_of,
    run_queries,
    stage_query_runner,
)
from agentmill.verify.tool_lints import Lint, static_lints

AUDIT = "/var/lib/agentmill/audit"


@dataclass
class Mutant:
    name: str
    description: str
    killed_by: list[str] = field(default_factory=list)  # verifiers that failed on it
    side_effect: bool = False  # a change to a field only the reference's tool chose

    @property
    def survived(self) -> bool:
        return not self.killed_by

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "killed_by": self.killed_by,
            "survived": self.survived,
            **({"side_effect": True} if self.side_effect else {}),
        }


@dataclass
class ToolAudit:
    lints: list[Lint] = field(default_factory=list)
    mutants: list[Mutant] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # mutants equal to the oracle's state
    error: str | None = None  # the audit itself could not run

    @property
    def survivors(self) -> list[Mutant]:
        """Wrong states that pass: a side effect the verifiers rightly leave alone is not one."""
        return [m for m in self.mutants if m.survived and not m.side_effect]

    def to_json(self) -> dict:
        return {
            "lints": [lint.to_json() for lint in self.lints],
            "mutants": [m.to_json() for m in self.mutants],
            "equivalent_mutants": self.skipped,
            "error": self.error,
        }


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
    reply = await guest_json(
        sb,
        [*PYTHON, f"{PRIVATE}/toolhost.py", "replay", spec_path],
        stdin={"calls": calls},
        timeout=600,
        what="replaying the reference calls",
    )
    return reply["results"]


async def _checks(task: Task, sb: Sandbox, db_dir: str, view: TrialView, judge) -> list[Check]:
    spec_path = await stage_query_runner(task, sb, db_dir=db_dir)
    return await evaluate(task, await run_queries(sb, spec_path, queries_of(task)), view, judge)


async def _checks_many(task: Task, sb: Sandbox, dirs: list[str], view: TrialView, judge) -> dict[str, list[Check]]:
    """Every verifier on each state, the queries of all states in one exec."""
    if not dirs:
        return {}
    spec_path = await stage_query_runner(task, sb)
    reply = await guest_json(
        sb,
        [*PYTHON, f"{PRIVATE}/toolhost.py", "query-dirs", spec_path],
        stdin={"dirs": dirs, "queries": queries_of(task)},
        timeout=600,
        what="querying the mutants",
    )
    return {d: await evaluate(task, reply["results"][d], view, judge) for d in dirs}


async def _state_hash(sb: Sandbox, task: Task, db_dir: str) -> str:
    """Content hash of every table of every gym, computed in the sandbox."""
    spec_path = await stage_query_runner(task, sb, db_dir=db_dir)
    reply = await guest_json(
        sb, [*PYTHON, f"{PRIVATE}/toolhost.py", "hash", spec_path], timeout=300, what=f"hashing {db_dir}"
    )
    return reply["hash"]


async def _audit(task: Task, sb: Sandbox, audit: ToolAudit, judge) -> None:
    spec = require_spec(task)
    gyms = [g.name for g in spec.gyms]
    await prepare_tool_state(task, sb)
    db = f"{TOOLS_ROOT}/db"
    initial, final = f"{AUDIT}/initial", f"{AUDIT}/final"
    await _sh(sb, f"mkdir -p {AUDIT} && cp -r {db} {initial} && cp -r {db} {final}")

    assert spec.calls is not None  # mutation audits only the tasks with reference calls
    calls = [{"tool": c.tool, "arguments": dict(c.arguments)} for c in spec.calls]
    results = await _replay(sb, task, final, calls)
    for i, (call, res) in enumerate(zip(calls, results)):
        if res.get("is_error"):
            audit.lints.append(
                Lint("replay_error", f"reference call {i} ({call['tool']}) failed: {res.get('content', '')[:300]}")
            )
    # the calls a trial's tool host would have logged as successful (failed ones are no look-ups)
    steps = [
        Step(
            step_id=i + 1,
            source="agent",
            tool_calls=[ToolCall(tool_call_id=f"c{i}", function_name=c["tool"], arguments=c["arguments"])],
        )
        for i, (c, r) in enumerate(zip(calls, results))
        if not r.get("is_error")
    ]
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
    states: list[tuple[str, str, str, bool]] = [("noop", "nothing done: the untouched state", initial, False)]
    writes = [i for i, r in enumerate(results) if not r.get("is_error") and r.get("changes", 0) > 0]
    if writes:
        undo = f"{AUDIT}/undo_last_write"
        await _sh(sb, f"cp -r {initial} {undo}")
        kept = [c for i, c in enumerate(calls) if i != writes[-1]]
        await _replay(sb, task, undo, kept)
        states.append(
            ("undo_last_write", f"all reference calls but #{writes[-1]} ({calls[writes[-1]]['tool']})", undo, False)
        )
    # bookkeeping as the state diff decides it (what the tools write on their own), shared with the mutants
    bookkeeping = (await state_diff.diff_states(task, sb, {}))["bookkeeping"] if state_diff.applies(task) else []
    request = {
        "gyms": gyms,
        "initial": initial,
        "final": final,
        "out": f"{AUDIT}/mutants",
        "bookkeeping": bookkeeping,
        "argument_values": sorted({json.dumps(v) for c in calls for v in _scalars(c["arguments"])}),
    }
    await sb.write_file(
        f"{PRIVATE}/mutants.py",
        (Path(__file__).resolve().parent.parent / "tools" / "guest" / "mutants.py").read_bytes(),
    )
    await sb.write_file(f"{PRIVATE}/mutants.json", json.dumps(request).encode())
    made = await guest_json(
        sb, [*PYTHON, f"{PRIVATE}/mutants.py", f"{PRIVATE}/mutants.json"], timeout=600, what="making mutants"
    )
    states += [(m["name"], m["description"], m["dir"], bool(m.get("side_effect"))) for m in made["mutants"]]

    final_hash = await _state_hash(sb, task, final)
    kept_states = []
    for name, description, path, side in states:
        if name in ("noop", "undo_last_write") and await _state_hash(sb, task, path) == final_hash:
            audit.skipped.append(name)
            continue
        kept_states.append((name, description, path, side))
    scrambled = [m["dir"] for m in made.get("scrambles", [])]
    on = await _checks_many(task, sb, [p for _, _, p, _ in kept_states] + scrambled, view, judge)
    changed = (
        (await state_diff.diff_states(task, sb, {p: p for _, _, p, _ in kept_states}))["violations"]
        if state_diff.applies(task) and kept_states
        else {}
    )
    passes_everywhere = {c.name for c in on_initial if c.passed and c.verifier_type == "database_state"}
    for name, description, path, side in kept_states:
        checks = on[path]
        killed = [c.name for c in checks if c.passed is False] + ([state_diff.NAME] if changed.get(path) else [])
        mutant = Mutant(name, description, killed, side_effect=side)
        audit.mutants.append(mutant)
        passes_everywhere &= {c.name for c in checks if c.passed}
        if side and mutant.survived:
            audit.lints.append(
                Lint(
                    "side_effect_unchecked",
                    f"{description}: a field the reference's tool set on its own "
                    "(no call chose it); no verifier checks it, as the task does not ask for it",
                    severity="warn",
                )
            )
    if audit.mutants:
        always = set(passes_everywhere)
        for path in scrambled:
            always &= {c.name for c in on[path] if c.passed}
        for name in sorted(passes_everywhere):
            if name in always:  # COUNT(*) >= 0: true of any database
                audit.lints.append(
                    Lint(
                        "vacuous_verifier",
                        "passes on every state tried, a scrambled and an empty database included: it checks nothing",
                        name,
                    )
                )
            else:  # a guard ("the other record stays untouched") passes on these states by design: reported, not a verdict
                audit.lints.append(
                    Lint(
                        "guard_verifier",
                        "passes on the untouched state and on every mutant "
                        "(a guard: it fails only on a scrambled or empty database)",
                        name,
                        severity="warn",
                    )
                )


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
