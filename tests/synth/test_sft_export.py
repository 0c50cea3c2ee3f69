"""SFT data out of synth: the accepted samples' verified ballot solver trajectories exported as rows by the
trace exporter (same filters, same exact rows as `agentmill export`), loaded by `datasets`, equal to what
the scripted solver endpoint was sent and answered; and the example recipe (examples/synth/) that rolls
a teacher out on `kind = "synth"`."""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import ExitStack
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentmill.cli import app
from agentmill.synth.config import load_config
from agentmill.synth.run import run_synth
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer
from tests.synth.scripted import card_line, config_text, role_servers, tool_player

pytestmark = sandbox
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "synth"


@pytest.fixture(scope="module")
def synth_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sft")
    cards = tmp / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        (tmp / "synth.toml").write_text(config_text(servers, cards, max_slots=1))
        summary = asyncio.run(run_synth(load_config(tmp / "synth.toml"), tmp / "synth-out"))
    assert summary["accepted"] == 1
    return tmp, servers["solver"].exchanges


def test_sft_rows_are_the_solver_conversations_the_ballot_verified(synth_run):
    tmp, exchanges = synth_run
    rows_path = tmp / "sft.jsonl"
    result = CliRunner().invoke(
        app, ["synth", "export", str(tmp / "synth-out"), "--format", "trl", "--out", str(rows_path), "--min-turns", "0"]
    )
    assert result.exit_code == 0, result.output
    from datasets import load_dataset

    rows = list(load_dataset("json", data_files=str(rows_path), split="train"))
    # one row per passing solver trial of the accepted attempt's ballot (it stopped after 2 of k = 3)
    trials = list((tmp / "synth-out" / "work").glob("*/a*/ballot-solver/trials/*/result.json"))
    passed = [t for t in trials if json.loads(t.read_text())["outcome"] == "passed"]
    assert len(rows) == len(passed) == 2
    # what crossed the HTTP boundary: the last request of a conversation (both tool results in it) and its reply
    answered = [e for e in exchanges if e.status == 200]
    last = [e for e in answered if sum(m["role"] == "tool" for m in e.request["messages"]) == 2]
    assert len(last) == 2
    for row, exchange in zip(rows, last):
        want = [json.loads(json.dumps(m)) for m in exchange.request["messages"]]
        want.append({"role": "assistant", "content": exchange.message["content"]})
        got = [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]
        assert got == want
        assert json.loads(row["tools"]) == exchange.request["tools"]
        assert row["provenance"]["reward"] == 1.0 and row["provenance"]["task"].startswith("card-good-s")
    calls = [c["function"]["name"] for m in rows[0]["messages"] for c in (m.get("tool_calls") or [])]
    assert calls == ["get_ticket", "close_ticket"]


def test_the_export_keeps_only_verified_trajectories_and_says_why_it_is_empty(synth_run):
    tmp, _ = synth_run
    # the default min_turns fits the tools agent (its 3-turn traces are kept); 5 removes every one of them:
    # one clear error naming the rule, nothing written
    default = CliRunner().invoke(
        app, ["synth", "export", str(tmp / "synth-out"), "-f", "trl", "-o", str(tmp / "d.jsonl")]
    )
    assert default.exit_code == 0 and len((tmp / "d.jsonl").read_text().splitlines()) == 2, default.output
    result = CliRunner().invoke(
        app, ["synth", "export", str(tmp / "synth-out"), "-f", "trl", "-o", str(tmp / "none.jsonl"), "--min-turns", "5"]
    )
    assert result.exit_code == 2 and "min_turns" in result.output and not (tmp / "none.jsonl").exists()
    # a misspelt --reasoning is one clear error (it once meant "drop" and wrote rows without reasoning)
    typo = CliRunner().invoke(
        app,
        ["synth", "export", str(tmp / "synth-out"), "-f", "trl", "-o", str(tmp / "t.jsonl"), "--reasoning", "thinks"],
    )
    assert typo.exit_code == 2 and "--reasoning" in typo.output and not (tmp / "t.jsonl").exists(), typo.output
    # a failed solver trial is no demonstration, whatever the filters file says about rewards
    filters = tmp / "filters.toml"
    filters.write_text('[filters]\nmin_turns = 0\nreward = "any"\n')
    trial = next((tmp / "synth-out" / "work").glob("*/a*/ballot-solver/trials/*/result.json"))
    saved = trial.read_text()
    trial.write_text(json.dumps({**json.loads(saved), "outcome": "failed", "reward": 0.0}))
    try:
        result = CliRunner().invoke(
            app,
            [
                "synth",
                "export",
                str(tmp / "synth-out"),
                "-f",
                "trl",
                "-o",
                str(tmp / "one.jsonl"),
                "--filters",
                str(filters),
            ],
        )
    finally:
        trial.write_text(saved)
    assert result.exit_code == 0, result.output
    assert len((tmp / "one.jsonl").read_text().splitlines()) == 1


def test_the_example_teacher_recipe_rolls_a_teacher_out_on_the_synth_output(synth_run, monkeypatch):
    tmp, _ = synth_run
    work = tmp / "recipe"
    work.mkdir()
    shutil.copytree(tmp / "synth-out", work / "synth-out")
    monkeypatch.setenv("TEACHER_API_KEY", "not-a-secret")
    with ChatServer(tool_player(lambda case: True)) as teacher:
        text = (EXAMPLES / "teacher-recipe.toml").read_text()
        assert 'kind = "synth"' in text and 'path = "synth-out"' in text
        (work / "recipe.toml").write_text(text.replace("https://api.example.com/v1", teacher.base_url))
        result = CliRunner().invoke(app, ["run", str(work / "recipe.toml"), "--out", str(work / "run")])
        assert result.exit_code == 0, result.output
        asked = [r for r in teacher.requests if r.get("tools")]
        assert asked and "[good] Ticket 10" in json.dumps(asked[0]["messages"])
    rows = [json.loads(x) for x in (work / "run" / "exports" / "sft.jsonl").read_text().splitlines()]
    assert rows and all(r["provenance"]["reward"] == 1.0 for r in rows)
