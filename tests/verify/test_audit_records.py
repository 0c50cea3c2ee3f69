"""The tool-task audit's records (verify/mutation.py): what `check --json` carries for each mutant and
the audit, and an audit that cannot run. The audits themselves run in tests/tools."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from agentmill.tasks.tool_spec import GymRef, ToolSpec
from agentmill.verify import mutation
from agentmill.verify.mutation import Mutant, ToolAudit, audit_tool_task
from agentmill.verify.tool_lints import Lint


def test_a_mutant_says_what_killed_it_and_a_side_effect_only_when_it_is_one():
    killed = Mutant("noop", "nothing done", killed_by=["ticket_closed"])
    assert killed.to_json() == {
        "name": "noop",
        "description": "nothing done",
        "killed_by": ["ticket_closed"],
        "survived": False,
    }
    side = Mutant("change_field:status", "status set to open", side_effect=True)
    assert side.to_json() == {
        "name": "change_field:status",
        "description": "status set to open",
        "killed_by": [],
        "survived": True,
        "side_effect": True,
    }


def test_survivors_leave_out_side_effects_and_the_audit_reports_everything():
    weak = Mutant("extra_write:t2", "t2 changed")
    audit = ToolAudit(
        lints=[Lint("vacuous_verifier", "passes on every state", "v")],
        mutants=[Mutant("noop", "x", killed_by=["v"]), weak, Mutant("change_field:s", "y", side_effect=True)],
        skipped=["undo_last_write"],
        error=None,
    )
    assert audit.survivors == [weak]
    out = audit.to_json()
    assert list(out) == ["lints", "mutants", "equivalent_mutants", "error"]
    assert out["lints"] == [Lint("vacuous_verifier", "passes on every state", "v").to_json()]
    assert [m["name"] for m in out["mutants"]] == ["noop", "extra_write:t2", "change_field:s"]
    assert out["equivalent_mutants"] == ["undo_last_write"] and out["error"] is None


def test_an_audit_that_cannot_run_reports_why_instead_of_raising(monkeypatch):
    spec = ToolSpec.model_validate(
        {
            "gyms": [GymRef(name="itsm", path=Path("/nowhere"))],
            "verifiers": [{"name": "v", "verifier_type": "database_state", "validation_config": {"query": "SELECT 1"}}],
            "calls": [{"tool": "close", "arguments": {}}],
        }
    )
    task = SimpleNamespace(tool_spec=spec, path=Path("t"), name="t")

    def broken(task, builder=None):
        raise RuntimeError("no sandbox today")

    monkeypatch.setattr(mutation, "static_lints", lambda task: [])
    monkeypatch.setattr(mutation, "task_sandbox", broken)
    audit = asyncio.run(audit_tool_task(task))
    assert audit.error == "RuntimeError: no sandbox today" and audit.mutants == []


def test_a_task_without_verifiers_or_reference_calls_has_nothing_to_audit(monkeypatch):
    monkeypatch.setattr(mutation, "static_lints", lambda task: [Lint("no_verifiers", "x", None)])
    monkeypatch.setattr(mutation, "task_sandbox", lambda *a, **k: (_ for _ in ()).throw(AssertionError("started")))
    spec = ToolSpec.model_validate({"gyms": [GymRef(name="itsm", path=Path("/nowhere"))]})
    audit = asyncio.run(audit_tool_task(SimpleNamespace(tool_spec=spec, path=Path("t"))))
    assert [lint.code for lint in audit.lints] == ["no_verifiers"] and audit.error is None
