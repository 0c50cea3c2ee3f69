"""The terminal agent end to end: scripted model server (real HTTP) -> tmux in a real sandbox -> verifier."""

import asyncio
import json

from agentmill.agents.base import AgentResult
from agentmill.agents.terminus import TerminusAgent
from agentmill.images import ImageBuilder
from agentmill.models import ModelClient, SamplingParams
from agentmill.rollout import run_trial
from agentmill.tasks import TaskConfig, load_task
from agentmill.verify import Outcome
from tests.conftest import sandbox, scratch_cache, simple_task
from tests.helpers.chat_server import ChatServer, Reply, queue, solving_policy, terminus_json

pytestmark = sandbox


def run_terminus(tmp_path, policy, *, max_turns=10, task_kw=None):
    task = load_task(simple_task(tmp_path, **(task_kw or {})))
    result = AgentResult()

    async def go(url):
        c = ModelClient(
            base_url=url, model="scripted", sampling=SamplingParams(temperature=0), backoff_base=0.01, max_retries=1
        )
        try:
            return await run_trial(
                task,
                TerminusAgent(c, max_turns=max_turns),
                ImageBuilder(cache=scratch_cache(tmp_path)),
                agent_result=result,
            )
        finally:
            await c.close()

    with ChatServer(policy) as srv:
        trial = asyncio.run(go(srv.base_url))
    return trial, result, srv.requests


def test_solves_through_the_terminal_and_confirms(tmp_path):
    trial, result, requests = run_terminus(tmp_path, solving_policy({"hello": "echo hello > /app/out.txt\n"}))
    assert trial.outcome is Outcome.PASSED, trial.exception
    stats = result.metadata["terminus"]
    assert stats["completed"] and stats["turns"] == 4 and stats["parse_errors"] == 0
    sources = [s.source for s in result.steps]
    assert sources[:2] == ["system", "user"] and sources.count("agent") == 4
    first_agent = result.steps[2]
    assert first_agent.tool_calls[0].function_name == "terminal"
    assert "echo hello" in first_agent.tool_calls[0].arguments["keystrokes"]
    assert first_agent.metrics.prompt_tokens == 10 and first_agent.metrics.completion_tokens == 5
    # the confirmation turn was asked for, and the constrained-decoding schema was offered
    assert "marked the task as complete" in requests[3]["messages"][-1]["content"]
    assert requests[0]["response_format"]["type"] == "json_schema"
    assert "Write the word hello" in requests[0]["messages"][1]["content"]


def test_parse_errors_go_back_to_the_model_and_are_counted(tmp_path):
    policy = queue(
        Reply("I think I should run ls"),
        Reply("{broken"),
        Reply(terminus_json([("echo hello > /app/out.txt\n", 0.3)])),
        Reply(terminus_json(complete=True)),
    )
    trial, result, requests = run_terminus(tmp_path, policy)
    assert trial.outcome is Outcome.PASSED
    assert result.metadata["terminus"]["parse_errors"] == 2
    assert "could not be used" in requests[1]["messages"][-1]["content"]
    assert result.steps[2].extra["parse_error"]


def test_observation_is_the_new_output_cut_to_10kb(tmp_path):
    policy = queue(
        Reply(terminus_json([("python3 -c \"print('A'*30000 + 'END')\"\n", 1.0)])), Reply(terminus_json(complete=True))
    )
    trial, result, requests = run_terminus(tmp_path, policy, max_turns=3)
    obs = requests[1]["messages"][-1]["content"]
    assert len(obs) < 10_500 and "END" in obs and "omitted" in obs
    assert result.metadata["terminus"]["truncated_observations"] == 1


def test_max_turns_ends_the_agent(tmp_path):
    trial, result, _ = run_terminus(tmp_path, queue(Reply(terminus_json([("true\n", 0.05)]))), max_turns=3)
    assert result.metadata["terminus"]["turns"] == 3 and result.metadata["terminus"].get("max_turns_reached")
    assert trial.outcome is Outcome.FAILED


def test_endpoint_failure_is_infra_error(tmp_path):
    trial, result, _ = run_terminus(tmp_path, queue(Reply(status=503)))
    assert trial.outcome is Outcome.INFRA_ERROR and "503" in trial.exception


def test_agent_timeout_from_the_task(tmp_path):
    cfg = TaskConfig.model_validate({"agent": {"timeout_sec": 2}})
    trial, result, _ = run_terminus(
        tmp_path, queue(Reply(terminus_json([("sleep 1\n", 1.0)]))), max_turns=100, task_kw={"config": cfg}
    )
    assert trial.outcome is Outcome.AGENT_TIMEOUT
    assert result.metadata["terminus"]["turns"] >= 1


def test_garbage_and_control_characters_never_crash_storage(tmp_path):
    nasty = "\x00\x07bell \ud800 lone surrogate \x1b[31mred\x1b[0m"
    policy = queue(
        Reply(nasty, reasoning="\ud83d half"),
        Reply(terminus_json([("printf '\\x01\\x02\\xff\\n'\n", 0.2)])),
        Reply(terminus_json(complete=True)),
    )
    trial, result, _ = run_terminus(tmp_path, policy, max_turns=4)
    text = json.dumps([s.model_dump(mode="json") for s in result.steps], ensure_ascii=False)
    text.encode("utf-8")  # would raise on a lone surrogate
    assert "\x00" not in text and "\x1b" not in text
