"""The mutation audit shared by `check` and AutoSynthData's negative gate (issue 30, section 3):
weak verifiers it must catch, and a clean task it must not reject."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from agentmill.rollout.check import check_tasks
from agentmill.tasks import load_task
from tests.tools.helpers import CLOSE_VPN_VERIFIERS, make_tool_task

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "agentmill" / "tasks" / "sample_tools"


def _db(name, query, expected):
    return {
        "name": name,
        "verifier_type": "database_state",
        "validation_config": {"query": query, "expected_value": expected, "comparison_type": "equals"},
    }


def check(path: Path):
    (result,) = asyncio.run(check_tasks([load_task(path)], concurrency=2))
    return result, result.to_json()


def survivors(js):
    return {m["name"].split("=")[0] for m in js["mutants"] if m["survived"] and not m.get("side_effect")}


def with_verifiers(tmp_path, sample: str, verifiers) -> Path:
    dest = tmp_path / sample
    shutil.copytree(SAMPLE / sample, dest)
    (dest / "tests" / "verifiers.json").write_text(json.dumps(verifiers, indent=1))
    return dest


# -- the clean task: assign T-4 to carol and leave a comment -----------------------------------------

ASSIGN_AND_COMMENT = [
    _db("t4_is_carols", "SELECT assignee FROM tickets WHERE id = 'T-4'", "carol"),
    _db("comment_left", "SELECT COUNT(*) FROM comments WHERE ticket_id = 'T-4' AND body LIKE '%laptop%ready%'", 1),
]


def test_a_clean_task_is_ok_and_the_tools_side_effect_is_a_note(tmp_path):
    task = make_tool_task(
        tmp_path / "t",
        gym="tracker",
        verifiers=ASSIGN_AND_COMMENT,
        instruction="Assign T-4 to carol and leave a comment on it that the laptop is ready.",
        calls=[
            {"tool": "get_ticket", "arguments": {"ticket_id": "T-4"}},
            {"tool": "assign_ticket", "arguments": {"ticket_id": "T-4", "assignee": "carol"}},
            {"tool": "add_comment", "arguments": {"ticket_id": "T-4", "body": "Your laptop is ready."}},
        ],
    )
    result, js = check(task)
    assert result.verdict == "ok", result.reason
    # assign moved T-4 to in_progress on its own: every other status survives, reported, not rejected
    side = [m for m in js["mutants"] if m.get("side_effect")]
    assert {m["name"] for m in side} == {
        'change_field:gym.tickets.status="open"',
        'change_field:gym.tickets.status="closed"',
    }
    assert all(m["survived"] for m in side)
    assert [lint["code"] for lint in js["lints"]] == ["side_effect_unchecked"] * 2
    # the comment's stamp (datetime('now') at the write) is bookkeeping: never mutated
    assert not any("created_at" in m["name"] for m in js["mutants"])
    # every assignee the foreign key allows was tried, and the right change plus one write elsewhere fails
    assert {m["name"] for m in js["mutants"] if m["name"].startswith("change_field:gym.tickets.assignee")} >= {
        'change_field:gym.tickets.assignee="ana"',
        'change_field:gym.tickets.assignee="bo"',
    }
    extra = [m for m in js["mutants"] if m["name"].startswith(("extra_write:", "extra_row:"))]
    assert {m["name"] for m in extra} >= {"extra_write:gym.tickets", "extra_row:gym.comments"}
    assert all("nothing_else_changed" in m["killed_by"] for m in extra)


# -- weak verifiers the audit must catch ---------------------------------------------------------------


def test_a_condition_that_also_accepts_the_destructive_value_is_weak(tmp_path):
    """IN ('maintenance', 'retired'): 'retired' is tried because the CHECK constraint allows it."""
    task = with_verifiers(
        tmp_path,
        "itsm-ci-into-maintenance",
        [
            _db(
                "in_maintenance",
                "SELECT status IN ('maintenance', 'retired') FROM config_items WHERE id = 'CI00016'",
                1,
            )
        ],
    )
    result, js = check(task)
    assert result.verdict == "weak_verifier"
    survived = {m["name"] for m in js["mutants"] if m["survived"]}
    assert 'change_field:itsm.config_items.status="retired"' in survived
    assert 'change_field:itsm.config_items.status="down"' not in survived  # the verifier rejects it


def test_a_reschedule_verifier_that_ignores_the_window_is_weak(tmp_path):
    """Date-times are mutated (a day, an hour off), and the collab gym's events table is no log."""
    task = with_verifiers(
        tmp_path,
        "collab-reschedule-weekly-sync",
        [_db("moved", "SELECT COUNT(*) FROM events WHERE id = 'EVT900010' AND starts_at != '2026-03-19T10:00:00Z'", 1)],
    )
    result, js = check(task)
    assert result.verdict == "weak_verifier"
    assert "change_field:collab.events.starts_at" in survivors(js)


def test_an_always_true_guard_is_a_failure_not_a_warning(tmp_path):
    task = make_tool_task(
        tmp_path / "t",
        verifiers=[*CLOSE_VPN_VERIFIERS, _db("guard", "SELECT COUNT(*) >= 0 FROM tickets WHERE id != 1", 1)],
    )
    result, js = check(task)
    assert result.verdict == "vacuous_verifier" and "guard" in result.reason
    assert ("vacuous_verifier", "guard", "error") in {
        (x["code"], x.get("verifier"), x["severity"]) for x in js["lints"]
    }


def test_a_real_guard_stays_a_warning(tmp_path):
    """'no other ticket closed' passes on every mutant too, but a scrambled database fails it."""
    task = make_tool_task(tmp_path / "t")
    result, js = check(task)
    assert result.verdict == "ok", result.reason
    assert not any(x["severity"] == "error" for x in js["lints"])
