"""SQL-state verification of tool tasks: EnterpriseOps-Gym semantics, reward.json, judge, tool calls, trials."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentmill.agents import NopAgent, OracleAgent
from agentmill.agents.base import AgentResult
from agentmill.images import ImageBuilder
from agentmill.rollout.trial import run_trial
from agentmill.runtime.paths import scratch_temp
from agentmill.tasks import load_task
from agentmill.traces.atif import Step, ToolCall
from agentmill.verify.judge import JudgeError, ModelJudge, parse_score
from agentmill.verify.outcome import Outcome
from agentmill.verify.sql_state import compare, extract_value, verify_tool_task
from tests.helpers.chat_server import ChatServer, Reply, queue
from tests.tools.helpers import CLOSE_VPN_VERIFIERS, make_tool_task


def run(coro):
    return asyncio.run(coro)


def test_value_extraction_follows_enterpriseops_gym():
    assert extract_value([{"n": 3}]) == 3
    assert extract_value([{"a": 1, "b": "x"}]) == {"a": 1, "b": "x"}
    assert extract_value([{"a": 1}, {"a": 2}]) == [{"a": 1}, {"a": 2}]
    assert extract_value([]) == []


@pytest.mark.parametrize(
    "actual, expected, kind, passed",
    [
        (3, 3, "equals", True),
        ("3", 3, "equals", False),
        (3.0, 3, "equals", True),
        (5, 3, "greater_than", True),
        (3, 3, "greater_than", False),
        (2, 3, "less_than", True),
        ("Renewed the VPN certificate", "certificate", "contains", True),
        ([{"a": "xyz"}], "xy", "contains", True),
        (None, "x", "contains", False),
        ("a", 1, "greater_than", False),  # a TypeError fails, never raises
        ([], [], "equals", True),
    ],
)
def test_comparisons(actual, expected, kind, passed):
    assert compare(actual, expected, kind)[0] is passed


async def _averify(task, steps, judge=None):
    from agentmill.tools import open_tool_session
    from agentmill.tools.sandboxed import task_limits, task_sandbox

    builder = ImageBuilder()
    image = await builder.get(task)
    scratch = scratch_temp("test-verify")
    rootfs = image.instantiate(scratch / "rootfs")
    async with task_sandbox(task, rootfs=rootfs) as sb, open_tool_session(task, sb) as s:
        for step in steps:
            for call in step.tool_calls or []:
                await s.call(call.function_name, call.arguments)
    result = await verify_tool_task(task, image, rootfs, scratch, task_limits(task), steps, judge=judge)
    files = {p.name: p.read_text() for p in (scratch / "verifier-logs").iterdir()}
    return result, files


def _verify(task, steps, judge=None):
    return run(_averify(task, steps, judge))


def _call_step(i, tool, args):
    return Step(
        step_id=i, source="agent", tool_calls=[ToolCall(tool_call_id=f"c{i}", function_name=tool, arguments=args)]
    )


def test_reward_json_has_one_entry_per_verifier(tmp_path):
    task = load_task(make_tool_task(tmp_path / "t"))
    steps = [_call_step(1, "close_ticket", {"ticket_id": 1, "resolution": "swapped the certificate"})]
    result, files = _verify(task, steps)
    assert result.outcome is Outcome.PASSED and result.reward == 1.0
    rewards = json.loads(files["reward.json"])
    assert rewards == {
        "vpn_closed": 1.0,
        "resolution_mentions_cert": 1.0,
        "others_untouched": 1.0,
        "nothing_else_changed": 1.0,
        "reward": 1.0,
    }  # the default check every tool task gets
    details = json.loads(files["verifiers.json"])["verifiers"]
    assert details[0]["actual"] == "closed" and details[0]["expected"] == "closed"


def test_one_failing_verifier_fails_the_task(tmp_path):
    task = load_task(make_tool_task(tmp_path / "t"))
    steps = [_call_step(1, "close_ticket", {"ticket_id": 1, "resolution": "rebooted"})]  # no "certificate"
    result, _ = _verify(task, steps)
    assert result.outcome is Outcome.FAILED and result.reward == 0.0
    assert result.rewards["vpn_closed"] == 1.0 and result.rewards["resolution_mentions_cert"] == 0.0


def test_a_query_that_errors_is_the_verifiers_fault(tmp_path):
    bad = [
        *CLOSE_VPN_VERIFIERS,
        {
            "name": "typo",
            "verifier_type": "database_state",
            "validation_config": {"query": "SELECT nope FROM tickets", "expected_value": 1},
        },
    ]
    task = load_task(make_tool_task(tmp_path / "t", verifiers=bad))
    result, _ = _verify(task, [])
    assert result.outcome is Outcome.VERIFIER_ERROR and "typo: query failed" in result.error


def test_verifier_queries_are_read_only(tmp_path):
    sneaky = [
        {
            "name": "writes",
            "verifier_type": "database_state",
            "validation_config": {"query": "UPDATE tickets SET status = 'closed' RETURNING id", "expected_value": 1},
        }
    ]
    task = load_task(make_tool_task(tmp_path / "t", verifiers=sneaky))
    result, _ = _verify(task, [])
    assert result.outcome is Outcome.VERIFIER_ERROR and "readonly" in result.error.lower().replace("-", "")


def test_tool_execution_checks_the_calls_made(tmp_path):
    verifiers = [
        {
            "name": "used_close",
            "verifier_type": "tool_execution",
            "validation_config": {"selected_tools": ["close_ticket"], "minimum_tool_calls": 2},
        }
    ]
    task = load_task(make_tool_task(tmp_path / "t", verifiers=verifiers))
    one = [_call_step(1, "close_ticket", {"ticket_id": 1, "resolution": "x"})]
    two = [_call_step(1, "list_tickets", {}), *[_call_step(2, "close_ticket", {"ticket_id": 1, "resolution": "x"})]]
    assert _verify(task, one)[0].outcome is Outcome.FAILED  # too few calls
    assert _verify(task, two)[0].outcome is Outcome.PASSED


def test_response_check_asks_the_judge_with_the_query_result_and_final_answer(tmp_path):
    verifiers = [
        {
            "name": "explains",
            "verifier_type": "response_check",
            "validation_config": {
                "sql_query": "SELECT status FROM tickets WHERE id = 3",
                "comparison_prompt": "Does the answer say ticket 3 is pending?",
                "minimum_comparison_value": 7,
            },
        }
    ]
    task = load_task(make_tool_task(tmp_path / "t", verifiers=verifiers))
    steps = [Step(step_id=1, source="agent", message="Ticket 3 is still pending; I cannot close it.")]
    from agentmill.models.client import ModelClient

    async def both(base_url):
        judge = ModelJudge(ModelClient(base_url=base_url, model="judge", max_retries=0))
        return (await _averify(task, steps, judge))[0], (await _averify(task, steps, judge))[0]

    with ChatServer(
        queue(Reply('{"score": 9, "reasoning": "matches"}'), Reply('{"score": 4, "reasoning": "no"}'))
    ) as server:
        good, bad = run(both(server.base_url))
        sent = server.requests[0]["messages"][1]["content"]
    assert good.outcome is Outcome.PASSED and bad.outcome is Outcome.FAILED
    assert '"status": "pending"' in sent and "Ticket 3 is still pending" in sent and "Does the answer say" in sent
    # without a judge the verifier is reported, not counted
    unjudged, files = _verify(task, steps, None)
    assert json.loads(files["verifiers.json"])["verifiers"][0]["passed"] is None


def test_judge_replies_that_are_not_scores_are_errors():
    assert parse_score('```json\n{"score": 8, "reasoning": "ok"}\n```') == (8.0, "ok")
    for text in ("great!", '{"score": "high"}', '{"score": 42}'):
        with pytest.raises(JudgeError):
            parse_score(text)


def test_trials_oracle_passes_nop_fails_and_state_is_per_trial(tmp_path):
    task = load_task(make_tool_task(tmp_path / "t", answer="Closed ticket 1."))

    async def go():
        builder = ImageBuilder()
        oracle_result = AgentResult()
        return await asyncio.gather(
            run_trial(task, OracleAgent(), builder, agent_result=oracle_result), run_trial(task, NopAgent(), builder)
        ), oracle_result

    (oracle, nop), steps = run(go())
    assert oracle.outcome is Outcome.PASSED and oracle.reward == 1.0
    assert nop.outcome is Outcome.FAILED and nop.rewards["vpn_closed"] == 0.0 and nop.rewards["others_untouched"] == 1.0
    assert [c.function_name for s in steps.steps for c in (s.tool_calls or [])] == ["list_tickets", "close_ticket"]
    assert steps.steps[-1].message == "Closed ticket 1." and steps.metadata["replay_errors"] == []
    # a demonstration in the tools agent's shape: system spec, prompt (with the tools offered), calls, answer
    assert [s.source for s in steps.steps[:2]] == ["system", "user"]
    assert steps.steps[1].message == task.instruction.strip()
    assert {t["function"]["name"] for t in steps.steps[0].extra["tools"]} >= {"close_ticket", "list_tickets"}


def test_a_broken_seed_is_a_typed_failure_not_a_crash(tmp_path):
    task = load_task(make_tool_task(tmp_path / "t", seed_sql="INSERT INTO nowhere VALUES (1);"))
    result = run(run_trial(task, NopAgent(), ImageBuilder()))
    # the task's fault, not the machinery's: `--retry infra` must not rerun it
    assert result.outcome is Outcome.TASK_ERROR and not result.outcome.is_infra
    assert "seed.sql" in result.exception and "nowhere" in result.exception


def test_no_final_answer_fails_a_response_check_without_any_judge(tmp_path):
    # a refusal task's right end state is the untouched one: the answer is what nop lacks
    verifiers = [
        {
            "name": "nothing_closed",
            "verifier_type": "database_state",
            "validation_config": {"query": "SELECT COUNT(*) FROM tickets WHERE status = 'closed'", "expected_value": 0},
        },
        {
            "name": "explains",
            "verifier_type": "response_check",
            "validation_config": {
                "sql_query": "SELECT status FROM tickets WHERE id = 3",
                "comparison_prompt": "Does the answer refuse and say why?",
            },
        },
    ]
    task = load_task(make_tool_task(tmp_path / "t", verifiers=verifiers, calls=[], answer="I can't close it: pending."))
    silent, _ = _verify(task, [], None)
    assert silent.outcome is Outcome.FAILED and silent.rewards["explains"] == 0.0
    answered, files = _verify(task, [Step(step_id=1, source="agent", message="I can't close it: pending.")], None)
    # not evaluated, not counted, and never a pass: the reward waits for a judge
    assert answered.outcome is Outcome.UNJUDGED and answered.reward is None and "explains" not in answered.rewards


def test_a_tools_py_that_breaks_the_contract_fails_before_the_agent(tmp_path):
    task_dir = make_tool_task(tmp_path / "t")
    tools = task_dir / "environment" / "gym" / "tools.py"
    tools.write_text(tools.read_text() + '\n\ndef bad(db, when: object) -> str:\n    """Odd type."""\n')
    result = run(run_trial(load_task(task_dir), OracleAgent(), ImageBuilder()))
    assert result.outcome is Outcome.TASK_ERROR
    assert (
        "tools environment" in result.exception and "bad: parameter 'when': unsupported type hint" in result.exception
    )
