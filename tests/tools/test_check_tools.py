"""`check` on tool tasks: lints and negative verification by mutation, each planted and watched firing."""

from __future__ import annotations

import asyncio

import pytest

from agentmill.rollout.check import check_tasks
from agentmill.tasks import load_task
from agentmill.verify.tool_lints import sql_problem
from tests.tools.helpers import CLOSE_VPN_CALLS, CLOSE_VPN_VERIFIERS, make_tool_task

VPN_CLOSED, MENTIONS_CERT, OTHERS_UNTOUCHED = CLOSE_VPN_VERIFIERS


def _db(name, query, expected, kind="equals"):
    return {
        "name": name,
        "verifier_type": "database_state",
        "validation_config": {"query": query, "expected_value": expected, "comparison_type": kind},
    }


def check(tmp_path, **kw):
    task = load_task(make_tool_task(tmp_path / "task", **kw))
    (result,) = asyncio.run(check_tasks([task], concurrency=2))
    return result, result.to_json()


def test_a_sound_task_is_ok_with_every_mutant_killed(tmp_path):
    result, js = check(tmp_path)
    assert result.verdict == "ok", result.reason
    assert js["oracle"]["reward"] == 1.0 and js["nop"]["reward"] == 0.0
    names = {m["name"].split("=")[0] for m in js["mutants"]}
    assert {
        "noop",
        "undo_last_write",
        "change_field:gym.tickets.status",
        "change_field:gym.tickets.resolution",
        "wrong_record:gym.tickets",
        "extra_write:gym.tickets",
    } <= names
    # every other status the CHECK constraint allows is tried, not only the most common one
    assert {m["name"] for m in js["mutants"] if m["name"].startswith("change_field:gym.tickets.status")} == {
        'change_field:gym.tickets.status="open"',
        'change_field:gym.tickets.status="pending"',
    }
    assert all(not m["survived"] and m["killed_by"] for m in js["mutants"])
    assert js["lints"] == []


def test_a_weak_verifier_is_caught_by_a_surviving_mutant(tmp_path):
    # checks only that *some* ticket was closed: closing the wrong one passes too
    weak = [_db("something_closed", "SELECT COUNT(*) FROM tickets WHERE status = 'closed'", 1)]
    result, js = check(tmp_path, verifiers=weak)
    assert result.verdict == "weak_verifier"
    survivors = [m["name"] for m in js["mutants"] if m["survived"]]
    assert any(n.startswith("change_field:gym.tickets.resolution") for n in survivors)
    assert "change_field:gym.tickets.resolution" in result.reason
    # closing the wrong ticket gets reward 0 anyway: the default 'nothing else changed' check fails it
    (wrong,) = [m for m in js["mutants"] if m["name"] == "wrong_record:gym.tickets"]
    assert wrong["killed_by"] == ["nothing_else_changed"]


def test_a_verifier_that_ignores_a_written_field_is_weak(tmp_path):
    result, js = check(tmp_path, verifiers=[VPN_CLOSED, OTHERS_UNTOUCHED])  # resolution never checked
    assert result.verdict == "weak_verifier"
    assert {m["name"].split("=")[0] for m in js["mutants"] if m["survived"]} == {"change_field:gym.tickets.resolution"}


def test_a_vacuous_verifier_is_a_lint(tmp_path):
    result, js = check(tmp_path, verifiers=[*CLOSE_VPN_VERIFIERS, _db("always", "SELECT 1", 1)])
    assert result.verdict == "vacuous_verifier" and "reads no table" in result.reason
    # statically (it reads no table) and dynamically (it passes on a scrambled and an empty database too)
    assert [(lint["code"], lint["verifier"], lint["severity"]) for lint in js["lints"]] == [
        ("vacuous_verifier", "always", "error")
    ] * 2


def test_a_verifier_that_no_wrong_state_fails_is_reported_not_a_verdict(tmp_path):
    # a guard on a record nothing touches passes everywhere: a warning in --json, the task stays ok
    guard = _db("bo_exists", "SELECT COUNT(*) FROM users WHERE name = 'bo'", 1)
    result, js = check(tmp_path, verifiers=[*CLOSE_VPN_VERIFIERS, guard])
    assert result.verdict == "ok", result.reason
    assert [(lint["verifier"], lint["severity"]) for lint in js["lints"]] == [("bo_exists", "warn")]


def test_a_query_that_errors_is_a_lint(tmp_path):
    broken = [*CLOSE_VPN_VERIFIERS, _db("typo", "SELECT status FROM tickts WHERE id = 1", "closed")]
    result, js = check(tmp_path, verifiers=broken)
    assert result.verdict == "query_error"
    assert any(
        lint["code"] == "query_error" and lint["verifier"] == "typo" and "no such table" in lint["message"]
        for lint in js["lints"]
    )


def test_a_write_query_is_a_lint_before_anything_runs(tmp_path):
    result, js = check(tmp_path, verifiers=[*CLOSE_VPN_VERIFIERS, _db("sneaky", "DELETE FROM tickets", 0)])
    assert result.verdict == "query_error" and "must be a SELECT" in result.reason


def test_empty_and_duplicate_verifiers_are_lints(tmp_path):
    empty, _ = check(tmp_path / "a", verifiers=[])
    assert empty.verdict == "empty_verifiers"
    dup, js = check(tmp_path / "b", verifiers=[VPN_CLOSED, {**MENTIONS_CERT, "name": "vpn_closed"}])
    assert dup.verdict == "duplicate_verifier_names" and "vpn_closed" in dup.reason


def test_a_reference_call_that_errors_is_a_lint(tmp_path):
    calls = [*CLOSE_VPN_CALLS, {"tool": "get_ticket", "arguments": {"ticket_id": 404}}]
    result, js = check(tmp_path, calls=calls)
    assert result.verdict == "replay_error"
    assert "reference call 2 (get_ticket) failed: ValueError: no ticket 404" in result.reason


def test_a_refusal_task_skips_the_mutant_equal_to_the_right_answer(tmp_path):
    verifiers = [
        _db("nothing_closed", "SELECT COUNT(*) FROM tickets WHERE status = 'closed'", 0),
        {
            "name": "looked",
            "verifier_type": "tool_execution",
            "validation_config": {"selected_tools": ["get_ticket"], "minimum_tool_calls": 1},
        },
    ]
    result, js = check(
        tmp_path,
        verifiers=verifiers,
        calls=[{"tool": "get_ticket", "arguments": {"ticket_id": 3}}],
        answer="Ticket 3 is pending a replacement battery; policy forbids closing it.",
    )
    assert js["equivalent_mutants"] == ["noop"] and js["mutants"] == []
    assert result.verdict == "ok", result.reason


@pytest.mark.parametrize(
    "sql, problem",
    [
        ("SELECT COUNT(*) FROM t", None),
        ("WITH x AS (SELECT 1 AS a) SELECT a FROM x", None),
        ("SELECT 1 UNION SELECT 2", None),
        ("SELECT 1; SELECT 2", "one statement"),
        ("UPDATE t SET a = 1", "must be a SELECT"),
        ("SELEC 1 FROM", "does not parse"),
    ],
)
def test_sql_lint(sql, problem):
    got = sql_problem(sql)
    assert (got is None) if problem is None else (problem in got)


def test_check_json_reports_lints_and_mutants_per_task(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    make_tool_task(tmp_path / "ds" / "sound")
    make_tool_task(
        tmp_path / "ds" / "weak",
        verifiers=[_db("something_closed", "SELECT COUNT(*) FROM tickets WHERE status = 'closed'", 1)],
    )
    agentmill = Path(sys.executable).with_name("agentmill")
    run = subprocess.run(
        [str(agentmill), "check", str(tmp_path / "ds"), "--json", str(tmp_path / "check.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr
    rows = {r["task"]: r for r in json.loads((tmp_path / "check.json").read_text())}
    assert rows["sound"]["verdict"] == "ok" and rows["weak"]["verdict"] == "weak_verifier"
    for row in rows.values():
        assert {"lints", "mutants", "equivalent_mutants"} <= set(row)
    assert any(
        m["survived"] and m["name"].startswith("change_field:gym.tickets.resolution") for m in rows["weak"]["mutants"]
    )
    assert "weak_verifier" in run.stdout
