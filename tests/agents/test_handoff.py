"""Context handoff (agents/terminus/handoff.py, traces/handoff.py), driven through the CLI against a
scripted chat server (real HTTP, real sandbox): a task that outgrows --max-context is summarised and
finished in a fresh conversation, and what the server received is what the exports hold."""

import json
import subprocess
import sys

import pytest

from agentmill.agents.terminus.handoff import SUMMARY_REQUEST
from tests.conftest import sandbox, simple_task
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]
SUMMARY = "I wrote part1 into /app/p.txt. Left: write hello into /app/out.txt."
EARLY = terminus_json([("echo part1 > /app/p.txt\n", 0.3)], analysis="early work")


def agentmill(*args):
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def policy(summary: str):
    """Before the handoff: two turns whose endpoint counts fill the context (1040, then 1690 of 2000
    tokens: the next request passes 80%). The summary request gets `summary`. After: solve, confirm."""

    def answer(request):
        msgs = request["messages"]
        if msgs[-1]["content"] == SUMMARY_REQUEST:
            return Reply(summary, usage=(1700, 30))
        turns = sum(m["role"] == "assistant" for m in msgs)
        if "Your summary of it:" in msgs[1]["content"]:
            return Reply(
                terminus_json([("echo hello > /app/out.txt\n", 0.3)]) if turns == 0 else terminus_json(complete=True)
            )
        return Reply(EARLY, usage=(1000 + 650 * turns, 40))

    return answer


def rollout(tmp_path, summary: str):
    data = tmp_path / "ds"
    simple_task(data, "t0")
    run = tmp_path / "run"
    with ChatServer(policy(summary)) as srv:
        agentmill(
            "rollout",
            str(data),
            "--agent",
            "terminus",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--out",
            str(run),
            "--max-context",
            "2000",
            "--max-retries",
            "0",
        )
        exchanges = list(srv.exchanges)
    (folder,) = list((run / "trials").iterdir())
    return (
        run,
        exchanges,
        json.loads((folder / "result.json").read_text()),
        json.loads((folder / "trajectory.json").read_text()),
    )


def export(run, out, *flags):
    agentmill(
        "export",
        str(run),
        "--format",
        "trl",
        "--out",
        str(out),
        "--reasoning",
        "drop",
        "--min-turns",
        "0",
        "--keep-all-outcomes",
        *flags,
    )
    return [json.loads(line) for line in out.read_text().splitlines()]


def sent_with_reply(exchange) -> list[dict]:
    return [*exchange.request["messages"], {"role": "assistant", "content": exchange.message["content"]}]


@pytest.fixture(scope="module")
def handed_off(tmp_path_factory):
    return rollout(tmp_path_factory.mktemp("handoff"), SUMMARY)


def test_a_task_that_outgrows_the_context_is_finished_after_a_handoff(handed_off):
    _, exchanges, result, trajectory = handed_off
    assert result["outcome"] == "passed" and result["reward"] == 1.0
    assert result["agent_metadata"]["terminus"]["handoffs"] == 1
    requests = [e.request["messages"] for e in exchanges]
    (at,) = [i for i, m in enumerate(requests) if m[-1]["content"] == SUMMARY_REQUEST]
    assert at == 2  # after two turns: the third request would pass 80% of 2000 tokens
    # the summary request is the conversation so far plus the instruction, sent whole
    assert requests[at][: len(requests[1])] == requests[1]
    assert requests[at][len(requests[1])] == {"role": "assistant", "content": exchanges[1].message["content"]}
    # the fresh conversation: the system prompt, then the task, the summary and the screen
    fresh = requests[at + 1]
    assert [m["role"] for m in fresh] == ["system", "user"] and fresh[0] == requests[0][0]
    assert "Write the word hello" in fresh[1]["content"] and SUMMARY in fresh[1]["content"]
    assert "Current terminal screen:" in fresh[1]["content"] and "early work" not in json.dumps(fresh)
    # the trajectory: every step of both conversations, the handoff marked where the fresh one begins
    steps = trajectory["steps"]
    marked = [i for i, s in enumerate(steps) if "context_handoff" in (s.get("extra") or {})]
    assert len(marked) == 1 and steps[marked[0]]["source"] == "system"
    assert steps[marked[0] + 1]["message"] == fresh[1]["content"]
    assert sum(s["source"] == "agent" for s in steps[: marked[0]]) == 2  # the early turns stay recorded
    sub = steps[marked[0]]["extra"]["context_handoff"]["subagent"]["steps"]
    assert sub[-2]["message"] == SUMMARY_REQUEST and sub[-1]["message"] == SUMMARY


def test_rows_equal_what_the_server_received_across_the_handoff(handed_off, tmp_path):
    run, exchanges, _, _ = handed_off
    (row,) = export(run, tmp_path / "rows.jsonl")  # the summary (a subagent) is dropped by default
    main = [e for e in exchanges if e.request["messages"][-1]["content"] != SUMMARY_REQUEST]
    assert row["messages"] == sent_with_reply(main[-1])  # the last request the model received, and its reply
    assert row["provenance"]["outcome"] == "passed"


def test_the_summary_request_is_a_subagent_trace_kept_only_on_request(handed_off, tmp_path):
    run, exchanges, _, _ = handed_off
    rows = export(run, tmp_path / "keep.jsonl", "--subagents", "keep")
    assert len(rows) == 2
    (summary,) = [e for e in exchanges if e.request["messages"][-1]["content"] == SUMMARY_REQUEST]
    (sub,) = [r for r in rows if r["provenance"]["trial_id"].endswith(".summary-1")]
    assert sub["messages"] == sent_with_reply(summary)
    # the worker processes' path gives the same rows
    from agentmill.traces.export import export_run
    from agentmill.traces.filters import FilterSpec

    out = tmp_path / "workers.jsonl"
    export_run(
        run, "trl", out, spec=FilterSpec(subagents="keep", min_turns=0, drop_outcomes=[]), reasoning="drop", workers=2
    )
    assert [json.loads(line)["messages"] for line in out.read_text().splitlines()] == [r["messages"] for r in rows]


def test_a_fresh_conversation_that_does_not_fit_ends_context_exceeded(tmp_path):
    _, exchanges, result, trajectory = rollout(tmp_path, "x " * 5000)  # a summary of ~2500 tokens
    assert result["outcome"] == "context_exceeded"
    assert result["agent_metadata"]["terminus"]["handoffs"] == 1
    assert exchanges[-1].request["messages"][-1]["content"] == SUMMARY_REQUEST  # the fresh one was never sent
    assert any("context_handoff" in (s.get("extra") or {}) for s in trajectory["steps"])
