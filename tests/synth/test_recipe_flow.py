"""Item 8 end to end: a synth output folder is a recipe source, and its accepted task flows through the
recipe's rollout (the `tools` agent against a scripted teacher on a real local HTTP server), the trace
filters and the SFT export: the exported row is the teacher's demonstration of the synthesised task."""

from __future__ import annotations

import asyncio
import json

from agentmill.recipe.pipeline import Pipeline
from agentmill.recipe.schema import load_recipe
from agentmill.synth.candidate import Candidate, GymSet
from agentmill.synth.output import publish
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer
from tests.synth.scripted import FINAL, GYM, tool_player

pytestmark = sandbox


def test_synthesised_tasks_flow_into_rollouts_filters_and_sft_export(tmp_path):
    out = tmp_path / "synth-out"
    SynthStore(out).close()
    publish(
        Candidate(candidate_id="card-good-s0000", card_id="card-good", body=FINAL["good"]), out, GymSet(gym_dir=GYM)
    )
    with ChatServer(tool_player(lambda case: case == "good")) as teacher:
        path = tmp_path / "recipe.toml"
        path.write_text(f"""
[recipe]
name = "synth-flow"

[model]
name = "teacher"
base_url = "{teacher.base_url}"

[[sources]]
name = "synth"
kind = "synth"
path = "{out}"

[mix]
top_n = 1
budget = 1

[rollout]
agent = "tools"
max_turns = 5

[trace_filters]
min_turns = 2
reward = "success"

[[exports]]
format = "trl"
file = "sft.jsonl"
""")
        loaded, raw = load_recipe(path)
        reports = {r.stage: r for r in asyncio.run(Pipeline(loaded, raw, tmp_path / "run").run())}
        assert reports["rollout"].count_out == 1
        asked = [r for r in teacher.requests if r.get("tools")]
        assert asked and "[good] Ticket 10" in json.dumps(asked[0]["messages"])  # the synthesised prompt reached it
    rows = [json.loads(x) for x in (tmp_path / "run" / "exports" / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    calls = [
        c["function"]["name"]
        for m in rows[0]["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]
    assert calls == ["get_ticket", "close_ticket"]
    assert "card-good-s0000" in json.dumps(rows[0])  # provenance names the synthesised task
