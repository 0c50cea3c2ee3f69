"""End to end: `run_synth` with every role a scripted model on a real local HTTP server, real sandboxes,
real rollouts. Planted bad candidates are each caught by the gate that exists for them, repaired or
rejected, and the funnel shows it."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack

from agentmill.synth.config import load_config
from agentmill.synth.run import run_synth
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.synth.scripted import CASES, card_line, config_text, role_servers

pytestmark = sandbox


def _run(tmp_path, cases, **synth):
    cards = tmp_path / "cards.jsonl"
    cards.write_text("".join(card_line(c) + "\n" for c in cases))
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        (tmp_path / "synth.toml").write_text(config_text(servers, cards, **synth))
        config = load_config(tmp_path / "synth.toml")
        summary = asyncio.run(run_synth(config, tmp_path / "out"))
    return summary, servers


def _gates(store: SynthStore, candidate_prefix: str) -> list[tuple[str, int, str]]:
    return [
        (r["gate"], r["passed"], r["code"])
        for r in store.rows(
            "SELECT g.gate, g.passed, g.code FROM gate_results g JOIN attempts a USING (attempt_id) "
            "WHERE a.candidate_id LIKE ? ORDER BY a.n, g.rowid",
            (candidate_prefix + "%",),
        )
    ]


def test_planted_defects_are_caught_by_their_gates_and_repaired_or_rejected(tmp_path):
    cases = [c for c in CASES if c != "good"]  # 'garbage' ends as a clean candidate: the good path, once
    summary, servers = _run(tmp_path, cases)
    store = SynthStore.open_existing(tmp_path / "out")
    states = {r["card_id"]: r["state"] for r in store.rows("SELECT card_id, state FROM candidates")}
    # every card got exactly one box: the accepted ones reached their target, the too-easy one was paused
    assert sorted(r["card_id"] for r in store.rows("SELECT card_id FROM candidates")) == sorted(
        f"card-{c}" for c in cases
    )
    assert states == {**{f"card-{c}": "accepted" for c in cases if c != "easy"}, "card-easy": "rejected"}
    fail = lambda gate, code: (gate, 0, code)  # noqa: E731

    # weak verifier: a mutant (the right change on another record) survives -> negative gate, repaired
    weak = _gates(store, "card-weak")
    assert fail("negative", "mutant_survived") in weak and weak[-1] == ("ballot", 1, "ok")
    # vacuous verifier: the untouched state passes -> negative gate, repaired
    vac = _gates(store, "card-vacuous")
    assert fail("negative", "vacuous") in vac and vac[-1] == ("ballot", 1, "ok")
    # a reference call errors on replay -> positive gate (lint let it through: the arguments are well-typed)
    bad = _gates(store, "card-badref")
    assert ("lint", 1, "ok") in bad and fail("positive", "reference_error") in bad and bad[-1] == ("ballot", 1, "ok")
    # an entity that does not exist -> structural lint, before any sandboxed replay
    ghost = _gates(store, "card-ghost")
    assert ghost[2] == fail("lint", "missing_entity") and ghost[-1] == ("ballot", 1, "ok")
    # too easy: the target solves 3/3 -> ballot, repair keeps it easy, rejected after the bounded retries
    easy = _gates(store, "card-easy")
    assert easy.count(fail("ballot", "too_easy")) == 2
    # a generator reply that does not parse: a failed attempt with a diagnosis, then a fresh generation
    garbage = _gates(store, "card-garbage")
    assert garbage == [
        fail("parse", "unparseable"),
        ("novelty", 1, "ok"),
        ("contamination", 1, "ok"),
        ("lint", 1, "ok"),
        ("semantic", 1, "ok"),
        ("positive", 1, "ok"),
        ("completeness", 1, "ok"),
        ("negative", 1, "ok"),
        ("ballot", 1, "ok"),
    ]

    # diagnoses: the critic's where it made sense, the gate's own hint where its reply was prose
    diag = {
        r["candidate_id"].split("-s")[0]: (r["category"], json.loads(r["components"]), r["by"])
        for r in store.rows("SELECT a.candidate_id, d.* FROM diagnoses d JOIN attempts a USING (attempt_id)")
    }
    assert diag["card-weak"] == ("weak_verifier", ["verifiers"], "critic")
    assert diag["card-badref"] == ("bad_reference", ["calls"], "critic")
    assert diag["card-ghost"] == ("state_mismatch", ["seed_sql", "entities"], "gate")
    assert diag["card-easy"][0] == "capability_mismatch"
    assert diag["card-garbage"][0] == "bad_task_composition"
    # targeted repair: only the implicated components changed between the two attempts
    # (ghost: the repair was allowed seed_sql and entities; its entities were already right and stayed)
    for case, changed in (("weak", {"verifiers"}), ("badref", {"calls"}), ("ghost", {"seed_sql"})):
        bodies = [
            json.loads(r["body"])
            for r in store.rows("SELECT body FROM attempts WHERE candidate_id LIKE ? ORDER BY n", (f"card-{case}%",))
        ]
        assert {k for k in bodies[0] if bodies[0][k] != bodies[1][k]} == changed
        # the repair reply that made the second attempt is kept with it
        raw = store.rows("SELECT raw FROM attempts WHERE candidate_id LIKE ? AND n = 1", (f"card-{case}%",))[0]["raw"]
        assert set(json.loads(raw)) <= {"verifiers", "calls", "seed_sql", "entities"} and changed <= set(
            json.loads(raw)
        )
    # the easy card was flagged and paused by a meta-review
    easy_card = store.rows("SELECT multiplier, flagged FROM cards WHERE card_id = 'card-easy'")[0]
    assert easy_card["multiplier"] == 0 and "no acceptance" in easy_card["flagged"]

    # every role that answers JSON asked for its schema as constrained decoding (what crossed the wire)
    from agentmill.synth.candidate import candidate_schema
    from agentmill.synth.critic import CRITIC_SCHEMA
    from agentmill.synth.gates.semantic import JUDGE_SCHEMA

    asked = lambda server: [r["response_format"]["json_schema"]["schema"] for r in server.requests]  # noqa: E731
    generate = [r for r in servers["generator"].requests if "You repair" not in r["messages"][0]["content"]]
    assert all(r["response_format"]["json_schema"]["schema"] == candidate_schema() for r in generate)
    assert set(map(json.dumps, asked(servers["critic"]))) == {json.dumps(CRITIC_SCHEMA)}
    assert set(map(json.dumps, asked(servers["judge"]))) == {json.dumps(JUDGE_SCHEMA)}
    from tests.synth.local_smoke import typed_outcome_problems

    assert typed_outcome_problems(tmp_path / "out") == []
    # the information barrier on the wire: no generator request named a card's source task
    assert not any("eval-" in json.dumps(r) for r in servers["generator"].requests)
    # the ballot ran real tools-agent rollouts against the target and solver endpoints, and stopped as soon as
    # its verdict was known: 2 trials each decide both the too-easy and the accepted ones (k = 3)
    ballots = [json.loads(r["details"]) for r in store.rows("SELECT details FROM gate_results WHERE gate = 'ballot'")]
    assert ballots and all((b["target_trials"], b["solver_trials"]) == (2, 2) for b in ballots)
    assert len({json.dumps(r["messages"][1]) for r in servers["target"].requests}) >= 6
    assert all("tools" in r for r in servers["solver"].requests)

    # accepted samples: task folders `check` passes, and the JSONL
    out = tmp_path / "out"
    accepted = sorted(p.name for p in (out / "tasks").iterdir())
    assert len(accepted) == 5 and all(name.startswith("card-") for name in accepted)
    rows = [json.loads(line) for line in (out / "accepted.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == accepted
    from agentmill.rollout.check import check_tasks
    from agentmill.tasks import load_dataset

    sample = [n for n in accepted if n.startswith("card-weak")]  # a repaired one (the gates are check's machinery)
    results = asyncio.run(check_tasks(load_dataset(out / "tasks", names=sample).tasks))
    assert {r.task.name: r.verdict for r in results} == {name: "ok" for name in sample}

    # the funnel in the report
    from agentmill.synth.report import funnel

    f = {row["gate"]: row for row in funnel(store)}
    assert f["negative"]["failed"]["mutant_survived"] == 1 and f["negative"]["failed"]["vacuous"] == 1
    assert f["positive"]["failed"]["reference_error"] == 1 and f["lint"]["failed"]["missing_entity"] == 1
    assert f["ballot"]["failed"]["too_easy"] == 2 and f["parse"]["failed"]["unparseable"] == 1
    assert f["accepted"]["passed"] == 5
    from typer.testing import CliRunner

    from agentmill.cli import app

    result = CliRunner().invoke(app, ["synth", "report", str(out), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    for text in (
        "Funnel per gate",
        "mutant_survived 1",
        "reference_error 1",
        "missing_entity 1",
        "too_easy 2",
        "weak_verifier",
        "capability_mismatch",
        "Coverage against targets",
        "card-easy",
        "Ballot outcomes",
        "Cost and time",
        "Meta-reviews",
        "of target trials",
    ):
        assert text in page, text
    usage = {u["role"]: u["requests"] for u in store.rows("SELECT role, requests FROM usage")}
    assert usage["generator"] == len(servers["generator"].requests) and usage["target"] == len(
        servers["target"].requests
    )
    assert "<script" not in page and 'src="http' not in page and "<link" not in page  # self-contained
