"""Bradley-Terry ratings on the Elo scale against hand-computed values; the pairwise judge over a
real HTTP endpoint; the selection arms on a hand-checked pool."""

import asyncio
import json
import math

import pytest

from agentmill.grounded.pairwise import compare, fit, ratings
from agentmill.grounded.records import Spec
from agentmill.grounded.selection import Candidate, select_arms
from agentmill.models import ModelClient
from agentmill.verify.fence import unfence
from tests.grounded import scripted
from tests.helpers.chat_server import ChatServer, Reply


def test_two_systems_match_the_hand_computed_rating():
    # A beats B 3 times out of 4: the BT odds are 3, so A is 400*log10(3) = 190.85 Elo above B.
    outcomes = [("A", "B", "A")] * 3 + [("A", "B", "B")]
    r = fit(outcomes, ["A", "B"], anchor="B", anchor_rating=1000.0)
    assert r["B"] == 1000.0
    assert r["A"] == pytest.approx(1000.0 + 400 * math.log10(3), abs=1e-3)


def test_a_chain_of_three_and_ties():
    # A-B 2:1 and B-C 2:1, no A-C games: each pair's log-odds are free, so ln 2 apart each.
    outcomes = [("A", "B", "A"), ("B", "A", "B"), ("B", "A", "A"), ("B", "C", "A"), ("C", "B", "B"), ("B", "C", "B")]
    r = fit(outcomes, ["A", "B", "C"], anchor="B", anchor_rating=1500.0)
    step = 400 * math.log10(2)
    assert r["A"] == pytest.approx(1500 + step, abs=1e-3) and r["C"] == pytest.approx(1500 - step, abs=1e-3)
    # a tie counts one win each way: A-B with one win, one loss and one tie is even
    even = fit([("A", "B", "A"), ("A", "B", "B"), ("A", "B", "tie")], ["A", "B"], anchor="A")
    assert even["B"] == pytest.approx(1667.0, abs=1e-3)


def test_bootstrap_intervals_bracket_the_point_and_fix_the_anchor():
    outcomes = [("base", "sft", "B")] * 14 + [("base", "sft", "A")] * 6
    out = {r.system: r for r in ratings(outcomes, ["base", "sft"], anchor="base", bootstrap=300, seed=1)}
    assert out["base"].rating == out["base"].low == out["base"].high == 1667.0
    sft = out["sft"]
    assert sft.low < sft.rating < sft.high and sft.rating > 1667.0 and sft.comparisons == 20
    assert sft.rating == pytest.approx(1667.0 + 400 * math.log10(14 / 6), abs=2.0)  # alpha=0.01 shrinks a little


def test_pairwise_judge_sees_both_deliverable_sets(tmp_path):
    spec = Spec.model_validate(scripted.SPEC)
    for name, text in (("a", "Total,56476"), ("b", "Total,40651")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.csv").write_text(f"source,net_generation\n{text}\n")

    def policy(request):
        text = request["messages"][-1]["content"]
        a_part = text.split("Worker A's deliverables:")[1].split("Worker B's deliverables:")[0]
        return Reply(json.dumps({"winner": "A" if "56476" in unfence(a_part)[1]["summary.csv"] else "B"}))

    async def go(url):
        c = ModelClient(base_url=url, model="judge", max_retries=0)
        try:
            return [
                await compare(spec, tmp_path / "a", tmp_path / "b", c),
                await compare(spec, tmp_path / "b", tmp_path / "a", c),
            ]
        finally:
            await c.close()

    with ChatServer(policy) as srv:
        assert asyncio.run(go(srv.base_url)) == ["A", "B"]
    sent = srv.requests[0]["messages"][-1]["content"]
    b_token, b = unfence(sent.split("Worker B's deliverables:")[1])  # each worker's set in its own fence
    assert b["memo.md"].startswith("(not available") and b_token != unfence(sent.split("Worker B's")[0])[0]


def test_selection_arms_share_queries_and_candidates():
    pool = {
        "q1": [
            Candidate(run="q1r0", anchored=0.5, unanchored=0.9),
            Candidate(run="q1r1", anchored=0.97, unanchored=0.6),
        ],
        "q2": [Candidate(run="q2r0", anchored=0.9, unanchored=1.0)],  # best anchored 0.9 <= 0.95: query dropped
        "q3": [
            Candidate(run="q3r0", anchored=0.96, unanchored=0.7),
            Candidate(run="q3r1", anchored=0.96, unanchored=0.8),
        ],
    }
    arms = select_arms(pool, threshold=0.95, seed=3)
    assert arms["anchored"] == {"q1": "q1r1", "q3": "q3r0"}
    assert arms["unanchored"] == {"q1": "q1r0", "q3": "q3r1"}
    assert set(arms["random"]) == {"q1", "q3"} and all(r.startswith(q) for q, r in arms["random"].items())


def test_compare_command_over_two_systems_runs(tmp_path):
    import tomli_w
    from typer.testing import CliRunner

    from agentmill.cli import app

    store = tmp_path / "store"
    for task in ("t1", "t2", "t3"):
        (store / "tasks" / task / "tests").mkdir(parents=True)
        (store / "tasks" / task / "instruction.md").write_text("x")
        (store / "tasks" / task / "task.toml").write_text("")
        (store / "tasks" / task / "tests" / "spec.json").write_text(json.dumps(scripted.SPEC))
    for system, total in (("good", "56476"), ("bad", "40651")):
        for task in ("t1", "t2", "t3"):
            d = tmp_path / system / "trials" / f"{task}-run"
            (d / "deliverables").mkdir(parents=True)
            (d / "trial.json").write_text(json.dumps({"task": task}))
            (d / "deliverables" / "summary.csv").write_text(f"source,net_generation\nTotal,{total}\n")

    def policy(request):
        text = request["messages"][-1]["content"]
        a_part = text.split("Worker A's deliverables:")[1].split("Worker B's deliverables:")[0]
        return Reply(json.dumps({"winner": "A" if "56476" in unfence(a_part)[1]["summary.csv"] else "B"}))

    with ChatServer(policy) as srv:
        ep = {"base_url": srv.base_url, "model": "m", "max_retries": 0}
        (tmp_path / "g.toml").write_text(
            tomli_w.dumps(
                {"roles": {r: ep for r in ("assembler", "grapher", "compiler", "teacher", "reviser", "judge")}}
            )
        )
        res = CliRunner().invoke(
            app,
            [
                "ground",
                "compare",
                str(tmp_path / "g.toml"),
                "--store",
                str(store),
                "--system",
                f"good={tmp_path / 'good'}",
                "--system",
                f"bad={tmp_path / 'bad'}",
                "--anchor",
                "bad",
                "--out",
                str(tmp_path / "c.jsonl"),
            ],
        )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert [(r["a"], r["b"]) for r in rows] == [("bad", "good"), ("good", "bad"), ("bad", "good")]  # order alternates
    assert all((r["winner"] == "A") == (r["a"] == "good") for r in rows)  # the correct deliverables win each time
    assert len(srv.requests) == 3 and "1667.0" in res.output
