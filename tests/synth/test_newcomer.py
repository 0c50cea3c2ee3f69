"""A newcomer's path: the example synth.toml and cards.jsonl in examples/synth/ run as written against
scripted endpoints (real local HTTP servers, the bundled itsm gym, real sandboxes); user cards meet the
information barrier; a token budget stops the run cleanly; progress lines when stderr is no terminal; a
missing or unknown gym is one clear error that leaves --out untouched; role names survive in errors;
knowledge documents reach the agent as part of the task's setup."""

from __future__ import annotations

import json
import re
import shutil
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

from typer.testing import CliRunner

from agentmill.cli import app
from agentmill.synth.card import CapabilityCard
from agentmill.synth.store import SynthStore
from agentmill.synth.user_cards import barrier_user_cards
from agentmill.tasks import sample_tools_path
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply
from tests.synth.scripted import card_line, config_text, critic, judge, role_servers

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "synth"
NOW = "2026-03-16T09:30:00Z"
RUNBOOK = {
    "title": "Server maintenance runbook",
    "text": "Before a disk or memory replacement the owner team sets the server's CMDB status to maintenance, "
    "so monitoring stops paging. Find the server by its host name first; never guess its id.",
}


def _itsm(host: str, ci: str, prompt: str) -> dict:
    q = lambda sql, want: {"query": sql, "expected_value": want, "comparison_type": "equals"}  # noqa: E731
    return {
        "system": "You are the IT service desk assistant of Corvid Logistics. You act as Amara Adeyemi (USR0015), "
        f"Systems Administrator, at {NOW}. Look records up before you change them.",
        "prompt": prompt,
        "seed_sql": "UPDATE itsm_context SET value = 'USR0015' WHERE key = 'current_user';",
        "calls": [
            {"tool": "search_config_items", "arguments": {"query": host}},
            {"tool": "update_config_item_status", "arguments": {"ci_id": ci, "status": "maintenance"}},
        ],
        "answer": f"{host} is in maintenance now.",
        "verifiers": [
            {
                "name": "in_maintenance",
                "verifier_type": "database_state",
                "validation_config": q(
                    f"SELECT COUNT(*) FROM config_items WHERE id = '{ci}' AND status = 'maintenance' AND updated_at = '{NOW}'",
                    1,
                ),
            },
            {
                "name": "audited",
                "verifier_type": "database_state",
                "validation_config": q(
                    "SELECT group_concat(a.field || '|' || a.actor_id || '|' || ifnull(a.old_value, 'NULL') || '|' || "
                    f"ifnull(a.new_value, 'NULL'), ';') FROM audit_log a WHERE a.record = '{ci}' AND a.action = 'status'",
                    "status|USR0015|operational|maintenance",
                ),
            },
            {
                "name": "only_one_changed",
                "verifier_type": "database_state",
                "validation_config": q(f"SELECT COUNT(*) FROM config_items WHERE updated_at >= '{NOW}'", 1),
            },
        ],
        "entities": [{"table": "config_items", "column": "id", "value": ci}],
        "documents": [RUNBOOK],
    }


TASKS = {
    "win-csc-prod-01": _itsm(
        "win-csc-prod-01",
        "CI00033",
        "win-csc-prod-01 gets a new disk this morning. Please set it to maintenance in the CMDB, as the runbook says.",
    ),
    "win-cssp-prod-02": _itsm(
        "win-cssp-prod-02",
        "CI00044",
        "Memory swap on win-cssp-prod-02 starts now; flag that server as in maintenance in the CMDB.",
    ),
}


def _generator(request: dict) -> Reply:
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    if "You repair" in system:
        raise AssertionError(f"no repair expected: {user[-600:]}")
    return Reply(json.dumps(TASKS["win-cssp-prod-02" if "variant" in system else "win-csc-prod-01"]))


def _player(solves: bool):
    def policy(request: dict) -> Reply:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        host = next((h for h in TASKS if h in user), None)
        done = sum(m["role"] == "tool" for m in request["messages"])
        if not solves or host is None:
            return Reply("I cannot do that.")
        calls = TASKS[host]["calls"]
        if done >= len(calls):
            return Reply(TASKS[host]["answer"])
        return Reply(
            None, tool_calls=[{"id": f"c{done}", "name": calls[done]["tool"], "arguments": calls[done]["arguments"]}]
        )

    return policy


@sandbox
def test_the_example_config_and_cards_run_as_written_against_scripted_endpoints(tmp_path, monkeypatch):
    work = tmp_path / "example"
    shutil.copytree(EXAMPLES, work)
    monkeypatch.setenv("TEACHER_API_KEY", "not-a-secret")
    servers = {
        "generator": ChatServer(_generator),
        "critic": ChatServer(critic),
        "judge": ChatServer(judge),
        "target": ChatServer(_player(False)),
        "solver": ChatServer(_player(True)),
    }
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        text = (work / "synth.toml").read_text()
        for role, server in servers.items():  # only the endpoints change: every other line runs as written
            text = re.sub(rf'(\[roles\.{role}\]\nbase_url = )"[^"]*"', rf'\1"{server.base_url}"', text)
        (work / "synth.toml").write_text(text)
        result = CliRunner().invoke(app, ["synth", "run", str(work / "synth.toml"), "--out", str(work / "synth-out")])
        solver_requests = list(servers["solver"].requests)
    assert result.exit_code == 0, result.output
    assert "accepted 1 target samples and 1 variants" in result.output
    # not a terminal: one progress line per finished box
    assert re.search(r"box cmdb-maintenance-s0000: accepted \(1 of \d+ boxes; accepted 1\)", result.output), (
        result.output
    )
    # the user's card named a source task found nowhere near it: used, with the barrier's note
    assert "the information barrier could not check this card" in result.output
    out = work / "synth-out"
    tasks = sorted(p.name for p in (out / "tasks").iterdir())
    assert len(tasks) == 2 and (out / "report.html").is_file()
    # the knowledge document is part of the task's setup: a file of the task, and what the agent was given
    assert (out / "tasks" / tasks[0] / "documents" / "00.md").read_text().startswith("# Server maintenance runbook")
    assert RUNBOOK["text"] in solver_requests[0]["messages"][0]["content"]
    import asyncio

    from agentmill.rollout.check import check_tasks
    from agentmill.tasks import load_dataset

    results = asyncio.run(check_tasks(load_dataset(out / "tasks").tasks))
    assert {r.verdict for r in results} == {"ok"}


def test_user_cards_meet_the_information_barrier(tmp_path):
    clean = CapabilityCard.model_validate_json((EXAMPLES / "cards.jsonl").read_text().splitlines()[0])
    leaky = clean.model_copy(
        update={"card_id": "leaky", "workflow": ["search the CMDB for win-ef-prod-04", "set CI00016 to maintenance"]}
    )
    config = SimpleNamespace(
        diagnosis=None,
        barrier=None,
        synth=SimpleNamespace(benchmarks=[sample_tools_path()], cards=tmp_path / "cards.jsonl"),
    )
    store = SynthStore(tmp_path / "out")
    try:
        kept, notes = barrier_user_cards([clean, leaky], config, store)
        assert [c.card_id for c in kept] == ["cmdb-maintenance"]
        assert len(notes) == 1 and "leaky: card rejected by the information barrier" in notes[0]
        assert [r["card_id"] for r in store.rows("SELECT card_id FROM barrier")] == ["leaky"]
    finally:
        store.close()


@sandbox
def test_a_token_budget_stops_the_run_cleanly_and_holds_on_resume(tmp_path):
    cards = tmp_path / "cards.jsonl"
    cards.write_text("".join(card_line(c) + "\n" for c in ("good", "weak", "badref")))
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        (tmp_path / "synth.toml").write_text(
            config_text(servers, cards, workers=1, multiply_per_target=1, max_tokens=1)
        )
        runs = [
            CliRunner().invoke(
                app, ["synth", "run", str(tmp_path / "synth.toml"), "--out", str(tmp_path / "out"), "--no-report"]
            )
            for _ in range(2)
        ]
    for result in runs:
        assert result.exit_code == 0, result.output
        assert "stopped: token budget spent" in result.output
    store = SynthStore.open_existing(tmp_path / "out")
    # the box that started before the budget was spent finished and was recorded; nothing else started,
    # the Multiply stage included, and the resumed run started nothing either
    rows = store.rows("SELECT kind, state FROM candidates")
    assert len(rows) == 1 and rows[0]["kind"] == "target" and rows[0]["state"] in ("accepted", "rejected")


def test_a_missing_or_unknown_gym_is_one_clear_error_and_out_is_untouched(tmp_path):
    base = config_text(
        {
            r: SimpleNamespace(base_url="http://127.0.0.1:9/v1")
            for r in ("generator", "critic", "judge", "target", "solver")
        },
        tmp_path / "cards.jsonl",
    )
    cases = {
        "missing": (base.replace('gym_dir = "', 'gym_dir = "/nonexistent'), "env.gym_dir", "no such folder"),
        "unknown": (re.sub(r'gym_dir = "[^"]*"', 'gyms = ["payroll"]', base), "env.gyms", "unknown gym 'payroll'"),
    }
    for name, (text, field, problem) in cases.items():
        (tmp_path / f"{name}.toml").write_text(text)
        result = CliRunner().invoke(
            app, ["synth", "run", str(tmp_path / f"{name}.toml"), "--out", str(tmp_path / name)]
        )
        assert result.exit_code == 2 and field in result.output and problem in result.output, result.output
        assert not (tmp_path / name).exists()  # a corrected config runs into the same --out
    # a role name in brackets is text, not markup rich would swallow
    (tmp_path / "norole.toml").write_text(base.split("[roles.critic]")[0])
    result = CliRunner().invoke(app, ["synth", "run", str(tmp_path / "norole.toml"), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "[roles.critic]" in result.output, result.output
