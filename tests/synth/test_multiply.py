"""Multiply: each accepted Target sample gets `multiply_per_target` variants, each generated from the card and
that sample (never the card's source task), run through the same gates (ballot included), accepted with
lineage card -> target sample -> variant, and never used as a seed itself."""

from __future__ import annotations

import asyncio
import json
import tomllib
from contextlib import ExitStack

from agentmill.synth.config import load_config
from agentmill.synth.run import run_synth
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.synth.scripted import card_line, config_text, role_servers

pytestmark = sandbox


def test_variants_of_accepted_targets_pass_the_same_gates_with_lineage(tmp_path):
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        text = config_text(servers, cards, max_slots=1, multiply_per_target=2)
        # the solver is priced (USD per million tokens): 10 prompt + 5 completion tokens a scripted reply = 20 USD
        text = text.replace(
            'model = "scripted-solver"', 'model = "scripted-solver"\nprices = { input = 1e6, output = 2e6 }'
        )
        (tmp_path / "synth.toml").write_text(text)
        summary = asyncio.run(run_synth(load_config(tmp_path / "synth.toml"), tmp_path / "out"))
        assert (summary["accepted"], summary["multiplied"]) == (1, 2)
        # a rerun over the same folder, accepted variants in the store: nothing more to do, no variant seeds one
        again = asyncio.run(run_synth(load_config(tmp_path / "synth.toml"), tmp_path / "out"))
    assert (again["accepted"], again["multiplied"]) == (1, 2)
    store = SynthStore.open_existing(tmp_path / "out")
    cands = {r["candidate_id"]: r for r in store.rows("SELECT candidate_id, kind, parent_id, state FROM candidates")}
    target = next(c for c in cands.values() if c["kind"] == "target")
    variants = [c for c in cands.values() if c["kind"] == "multiply"]
    # exactly the variants asked for, each of the target sample; none of a variant
    assert len(variants) == 2 and all(v["parent_id"] == target["candidate_id"] for v in variants)
    assert not any(c["parent_id"] in {v["candidate_id"] for v in variants} for c in cands.values())
    # the same gates, the ballot included, for every variant
    for v in variants:
        gates = [
            (g["gate"], g["passed"])
            for g in store.rows(
                "SELECT g.gate, g.passed FROM gate_results g JOIN attempts a USING (attempt_id) WHERE a.candidate_id = ?",
                (v["candidate_id"],),
            )
        ]
        assert gates == [
            (g, 1)
            for g in ("novelty", "contamination", "lint", "semantic", "positive", "completeness", "negative", "ballot")
        ]
    # what the generator endpoint received for a variant: the multiply prompt, the card and the sample to vary
    multiply = [r for r in servers["generator"].requests if "variant" in r["messages"][0]["content"]]
    assert len(multiply) == 2
    user = multiply[0]["messages"][1]["content"]
    assert "Accepted sample to vary" in user and "[good] Ticket 10" in user and "case:good" in user
    assert "eval-good" not in json.dumps(multiply)  # the card's source task never crosses the barrier
    # lineage on disk: task.toml metadata and the JSONL
    for v in variants:
        meta = tomllib.loads((tmp_path / "out" / "tasks" / v["candidate_id"] / "task.toml").read_text())["metadata"]
        assert (meta["synth_kind"], meta["synth_parent"], meta["synth_card"]) == (
            "multiply",
            target["candidate_id"],
            "card-good",
        )
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "out" / "accepted.jsonl").read_text().splitlines())}
    assert {rows[v["candidate_id"]]["parent_id"] for v in variants} == {target["candidate_id"]}
    # cost: every solver request priced, summed over both runs, in the store and the report
    usage = {u["role"]: u for u in store.rows("SELECT * FROM usage")}
    solver_requests = len(servers["solver"].requests)
    assert usage["solver"]["requests"] == solver_requests and usage["solver"]["cost_usd"] == 20.0 * solver_requests
    assert usage["target"]["cost_usd"] == 0
    from agentmill.synth.report import render

    assert f"<td>solver</td><td>{solver_requests}</td>" in render(store) and f"{20.0 * solver_requests:.4f}" in render(
        store
    )
