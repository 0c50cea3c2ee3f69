"""Context overflow is the agent's own outcome: `context_exceeded`, verified and recorded, never
rerun by `--retry infra`. Driven through the CLI against a scripted chat server (real HTTP)."""

import json
import subprocess
import sys

from agentmill.verify.outcome import Outcome
from tests.conftest import sandbox, simple_task
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]
VLLM_FULL = (
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
    "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."
)
SOLVE = terminus_json([("echo hello > /app/out.txt\n", 0.3)])


def agentmill(*args):
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def by_turn(*replies):
    def policy(request):
        turn = sum(m["role"] == "assistant" for m in request["messages"])
        return replies[min(turn, len(replies) - 1)]

    return policy


def only_result(run):
    (folder,) = list((run / "trials").iterdir())
    return json.loads((folder / "result.json").read_text()), json.loads((folder / "trajectory.json").read_text())


def test_endpoint_saying_the_context_is_full_ends_as_context_exceeded(tmp_path):
    data = tmp_path / "ds"
    simple_task(data, "t0")
    run = tmp_path / "run"
    args = ["rollout", str(data), "--agent", "terminus", "--model", "m", "--out", str(run), "--max-retries", "2"]
    with ChatServer(by_turn(Reply(SOLVE), Reply(status=400, error=VLLM_FULL))) as srv:
        agentmill(*args, "--base-url", srv.base_url)
        assert len(srv.requests) == 2  # a 400 for the context is not retried
        result, trajectory = only_result(run)
        assert result["outcome"] == Outcome.CONTEXT_EXCEEDED.value == "context_exceeded"
        assert result["reward"] == 1.0  # the final state was still verified: the agent had written the file
        assert "maximum context length" in result["exception"]
        assert [s["source"] for s in trajectory["steps"]] == ["system", "user", "agent"]
        # the agent's own failure: --retry infra leaves it alone
        r = agentmill(*args, "--base-url", srv.base_url, "--retry", "infra")
        assert "0 trials run, 1 already done" in r.stderr
        assert len(srv.requests) == 2
    status = json.loads(agentmill("status", str(run), "--json").stdout)
    assert status["outcomes"] == {"context_exceeded": 1}


def test_max_context_stops_the_agent_before_the_request(tmp_path):
    data = tmp_path / "ds"
    simple_task(data, "t0")
    run = tmp_path / "run"
    # the endpoint counts 1995 tokens for the first exchange: the next request cannot fit in 2000
    with ChatServer(by_turn(Reply(SOLVE, usage=(1990, 5)), Reply(terminus_json(complete=True)))) as srv:
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
        )
        assert len(srv.requests) == 1
    result, _ = only_result(run)
    assert result["outcome"] == "context_exceeded" and result["reward"] == 1.0
    assert "--max-context 2000" in result["exception"]
    assert json.loads((run / "config.json").read_text())["max_context"] == 2000
    # with room to spare the same script finishes normally: a different trial identity
    run2 = tmp_path / "run2"
    with ChatServer(by_turn(Reply(SOLVE, usage=(1990, 5)), Reply(terminus_json(complete=True)))) as srv:
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
            str(run2),
            "--max-context",
            "100000",
        )
        assert len(srv.requests) == 3
    result2, _ = only_result(run2)
    assert result2["outcome"] == "passed"
    assert {p.name for p in (run / "trials").iterdir()} != {p.name for p in (run2 / "trials").iterdir()}
