"""The `tools` agent end to end: CLI rollout on bundled tool tasks -> scripted tool-calling chat
server (real HTTP) -> tools run inside the trial's sandbox -> SQL verifiers. Parallel calls, an
unknown tool, schema-violating and unparseable arguments, a plain answer that ends the episode,
max turns, and a tool task the terminal agent refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentmill
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]
TOOL_TASKS = Path(agentmill.__file__).parent / "tasks" / "sample_tools"
DUP, ORIGINAL = "INC0020026", "INC0020025"


def call(name, arguments, id=None):
    return {"id": id or f"call_{name}", "name": name, "arguments": arguments}


SCRIPTS = {
    "itsm-close-duplicate-incident": [
        Reply(
            "Let me look at both tickets.",
            reasoning="Two incidents to compare.",
            tool_calls=[call("get_incident", {"number": DUP}, "c1"), call("get_incident", {"number": ORIGINAL}, "c2")],
        ),
        Reply(
            None,
            tool_calls=[
                call("frobnicate", {}, "c3"),
                call("link_records", {"source": DUP, "target": ORIGINAL, "relation": "twin_of"}, "c4"),
                call("link_records", '{"source": "INC00', "c5"),
            ],
        ),
        Reply(
            None,
            tool_calls=[call("link_records", {"source": DUP, "target": ORIGINAL, "relation": "duplicate_of"}, "c6")],
        ),
        Reply(
            "<think>Now resolve it.</think>",
            tool_calls=[
                call(
                    "resolve_incident",
                    {
                        "number": DUP,
                        "resolution_code": "duplicate",
                        "resolution_notes": f"Duplicate of {ORIGINAL}, which is being worked on.",
                    },
                    "c7",
                )
            ],
        ),
        Reply(f"Resolved {DUP} as a duplicate of {ORIGINAL}.", reasoning="Done."),
    ],
    # never answers: runs out of turns
    "itsm-hold-for-vendor": [Reply(None, tool_calls=[call("get_incident", {"number": "INC0020005"})])],
}
MAX_TURNS = 6


def policy(request):
    first_user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    task = next(t for t in SCRIPTS if (TOOL_TASKS / t / "instruction.md").read_text().strip()[:50] in first_user)
    turn = sum(m["role"] == "assistant" for m in request["messages"])
    return SCRIPTS[task][min(turn, len(SCRIPTS[task]) - 1)]


def agentmill(*args):
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def rollout(tmp_path_factory):
    run = tmp_path_factory.mktemp("tools") / "run"
    with ChatServer(policy) as server:
        agentmill(
            "rollout",
            str(TOOL_TASKS),
            *[a for t in SCRIPTS for a in ("--task", t)],
            "--agent",
            "tools",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--out",
            str(run),
            "--max-turns",
            str(MAX_TURNS),
            "--max-retries",
            "0",
        )
    trials = {"run": run}
    for folder in (run / "trials").iterdir():
        result = json.loads((folder / "result.json").read_text())
        trials[result["task"]] = (
            result,
            json.loads((folder / "trajectory.json").read_text()),
            json.loads((folder / "telemetry.json").read_text()),
        )
    return server.exchanges, trials


def requests_of(exchanges, task):
    key = (TOOL_TASKS / task / "instruction.md").read_text().strip()
    return [
        e.request for e in exchanges if any(m["role"] == "user" and m["content"] == key for m in e.request["messages"])
    ]


def test_solves_with_parallel_calls_and_survives_bad_calls(rollout):
    exchanges, trials = rollout
    result, trajectory, telemetry = trials["itsm-close-duplicate-incident"]
    assert result["outcome"] == "passed" and result["reward"] == 1.0, result.get("exception")
    stats = result["agent_metadata"]["tools"]
    assert stats == {
        "turns": 5,
        "tool_calls": 7,
        "tool_errors": 3,
        "unknown_tools": 1,
        "invalid_arguments": 1,
        "answered": True,
        "redactions": 0,
    }
    requests = requests_of(exchanges, "itsm-close-duplicate-incident")
    assert len(requests) == 5
    first = requests[0]
    assert first["messages"][0]["role"] == "system" and "IT service desk" in first["messages"][0]["content"]
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"get_incident", "link_records", "resolve_incident"} <= names and "frobnicate" not in names
    assert all(r["tools"] == first["tools"] for r in requests)  # the same tools with every request
    # parallel calls: one assistant message with both calls, then one tool message per call, in order
    second = requests[1]["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "tool"]
    assert [c["id"] for c in second[-3]["tool_calls"]] == ["c1", "c2"] and second[-3][
        "content"
    ] == "Let me look at both tickets."
    assert [m["tool_call_id"] for m in second[-2:]] == ["c1", "c2"]
    assert (
        json.loads(second[-2]["content"])["number"] == DUP and json.loads(second[-1]["content"])["number"] == ORIGINAL
    )
    # the bad calls came back to the model as errors, and the next turn went on
    errors = {m["tool_call_id"]: m["content"] for m in requests[2]["messages"][-3:]}
    assert "unknown tool 'frobnicate'" in errors["c3"]
    assert "twin_of" in errors["c4"] or "relation" in errors["c4"]
    assert "must be a JSON object" in errors["c5"]
    assert requests[2]["messages"][-4]["tool_calls"][2]["function"]["arguments"] == '{"source": "INC00'  # as written
    agent_steps = [s for s in trajectory["steps"] if s["source"] == "agent"]
    assert agent_steps[1]["extra"]["tool_errors"] == 3
    assert agent_steps[3]["reasoning_content"] == "Now resolve it." and agent_steps[3]["message"] == ""
    assert (
        agent_steps[-1]["message"] == f"Resolved {DUP} as a duplicate of {ORIGINAL}."
        and "tool_calls" not in agent_steps[-1]
    )
    assert telemetry["tool_errors"] == 3 and telemetry["commands"] == 7


def test_max_turns_and_the_task_kind(rollout, tmp_path):
    exchanges, trials = rollout
    result, trajectory, _ = trials["itsm-hold-for-vendor"]
    stats = result["agent_metadata"]["tools"]
    assert stats["turns"] == MAX_TURNS and stats["max_turns_reached"] and not stats["answered"]
    assert result["outcome"] == "failed" and len(requests_of(exchanges, "itsm-hold-for-vendor")) == MAX_TURNS
    # an agent that does not work on tool tasks says so instead of failing obscurely
    with ChatServer(policy) as server:
        r = subprocess.run(
            [
                *CLI,
                "rollout",
                str(TOOL_TASKS),
                "--task",
                "itsm-hold-for-vendor",
                "--agent",
                "terminus",
                "--model",
                "m",
                "--base-url",
                server.base_url,
                "--out",
                str(tmp_path / "run"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert r.returncode != 0 and "terminus" in r.stderr and "tools" in r.stderr


def test_max_context_counts_the_tool_list(tmp_path):
    # the itsm gym's tool schemas alone are thousands of tokens: nothing may be sent
    run = tmp_path / "run"
    with ChatServer(policy) as server:
        agentmill(
            "rollout",
            str(TOOL_TASKS),
            "--task",
            "itsm-hold-for-vendor",
            "--agent",
            "tools",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--out",
            str(run),
            "--max-context",
            "1000",
        )
        assert server.requests == []
    (folder,) = list((run / "trials").iterdir())
    result = json.loads((folder / "result.json").read_text())
    assert result["outcome"] == "context_exceeded" and result["reward"] is not None


def test_rl_rows_of_tool_tasks_carry_the_system_spec_and_the_tools(rollout, tmp_path):
    exchanges, trials = rollout
    out = tmp_path / "rl.jsonl"
    agentmill("export", str(trials["run"]), "--format", "rl", "--out", str(out), "--keep-all-outcomes")
    rows = {r["extra_info"]["task"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == set(SCRIPTS)
    row = rows["itsm-close-duplicate-incident"]
    first = requests_of(exchanges, "itsm-close-duplicate-incident")[0]
    assert row["prompt"] == first["messages"][:2] and row["ability"] == "agentic/tools"
    assert json.loads(row["extra_info"]["tools"]) == first["tools"]


def test_trl_parquet_of_real_tool_schemas_loads_with_datasets(rollout, tmp_path):
    from datasets import load_dataset

    _exchanges, trials = rollout
    for name in ("trl.parquet", "trl.jsonl"):
        agentmill(
            "export",
            str(trials["run"]),
            "--format",
            "trl",
            "--out",
            str(tmp_path / name),
            "--min-turns",
            "0",
            "--keep-all-outcomes",
        )
        ds = load_dataset(
            "parquet" if name.endswith("parquet") else "json", data_files=str(tmp_path / name), split="train"
        )
        row = next(r for r in ds if r["provenance"]["task"] == "itsm-close-duplicate-incident")
        tools = json.loads(row["tools"])
        assert {t["function"]["name"] for t in tools} >= {"get_incident", "resolve_incident"}
        calls = [c for m in row["messages"] if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
        assert calls[0]["function"] == {"name": "get_incident", "arguments": json.dumps({"number": DUP})}
