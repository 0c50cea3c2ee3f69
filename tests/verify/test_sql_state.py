"""Tool-task verdicts (verify/sql_state.py) rule by rule: what the verifiers read from the trajectory,
each verifier type's check given query results, and how checks become a reward and an outcome. The
queries run in real sandboxes in tests/tools/test_verify.py; the attacks in test_tool_reward_hacks.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentmill.tasks.tool_spec import GymRef, ToolSpec
from agentmill.traces.atif import Observation, ObservationResult, Step, ToolCall
from agentmill.verify import Outcome
from agentmill.verify.judge import NEEDS_JUDGE, JudgeError
from agentmill.verify.sql_state import Check, TrialView, evaluate, outcome_of, queries_of, rewards_of

GYM = (GymRef(name="itsm", path=Path("/nowhere")),)


def task(*verifiers):
    return SimpleNamespace(tool_spec=ToolSpec.model_validate({"gyms": GYM, "verifiers": list(verifiers)}), path="t")


def db(name, query, expected, kind="equals", gym=None):
    cfg = {"query": query, "expected_value": expected, "comparison_type": kind}
    return {"name": name, "verifier_type": "database_state", "validation_config": cfg, "gym_name": gym}


def judged(name, subject="final_answer", minimum=7):
    cfg = {"sql_query": f"SELECT {name}", "comparison_prompt": f"check {name}", "minimum_comparison_value": minimum}
    return {"name": name, "verifier_type": "response_check", "validation_config": {**cfg, "subject": subject}}


def called(name, tools=(), minimum=1):
    cfg = {"selected_tools": list(tools), "minimum_tool_calls": minimum}
    return {"name": name, "verifier_type": "tool_execution", "validation_config": cfg}


class Judge:
    """Where the judge stands: records what it was asked, answers a score or fails."""

    def __init__(self, score=8.0, fail=False):
        self.score_, self.fail, self.asked = score, fail, []

    async def score(self, prompt, data):
        self.asked.append((prompt, data))
        if self.fail:
            raise JudgeError("judge down")
        return self.score_, "because"


def run(t, results, view=None, judge=None):
    return asyncio.run(evaluate(t, results, view or TrialView(final_answer="Done."), judge))


# -- the trajectory -------------------------------------------------------------------------------


def steps():
    return [
        Step(step_id=1, source="user", message="close T-4"),
        Step(
            step_id=2,
            source="agent",
            message="looking",
            tool_calls=[
                ToolCall(tool_call_id="a", function_name="get_ticket", arguments={"id": 4}),
                ToolCall(tool_call_id="b", function_name="close", arguments={"note": "x" * 3000}),
                ToolCall(tool_call_id="c", function_name="assign", arguments={}),
            ],
            observation=Observation(
                results=[
                    ObservationResult(source_call_id="a", content="T-4 open"),
                    ObservationResult(source_call_id="b", content="y" * 3000),
                ]
            ),
        ),
        Step(step_id=3, source="agent", message="The ticket is closed."),
        Step(step_id=4, source="agent", message="   "),
        Step(step_id=5, source="user", message="thanks"),
    ]


def test_the_view_holds_the_agents_calls_and_its_last_words():
    view = TrialView.from_steps(steps())
    assert view.tools_called == ["get_ticket", "close", "assign"]
    assert view.final_answer == "The ticket is closed."  # the last non-blank agent message without calls
    first, second, third = view.calls
    assert first == {"tool": "get_ticket", "arguments": {"id": 4}, "result": "T-4 open"}
    assert second["arguments"].endswith(" [cut]") and len(second["arguments"]) == 2000 + len(" [cut]")
    assert second["result"] == "y" * 2000
    assert third == {"tool": "assign", "arguments": {}, "result": None}


def test_a_trajectory_without_a_final_message_has_no_answer():
    assert TrialView.from_steps(steps()[:2]).final_answer == ""


# -- each verifier type ---------------------------------------------------------------------------


def test_queries_are_asked_in_verifier_order_and_tool_checks_ask_none():
    t = task(db("a", "SELECT 1", 1, gym="itsm"), called("c"), judged("b"))
    assert queries_of(t) == [{"sql": "SELECT 1", "gym": "itsm"}, {"sql": "SELECT b", "gym": None}]


def test_a_database_check_compares_the_extracted_value_and_a_failed_query_is_an_error():
    t = task(db("ok", "q1", 3), db("bad", "q2", 3), db("broken", "q3", 3))
    ok, bad, broken = run(t, [{"rows": [{"n": 3}]}, {"rows": [{"n": 4}]}, {"error": "no such table"}])
    assert (ok.passed, ok.actual, ok.expected, ok.details) == (True, 3, 3, "equals: 3 vs 3")
    assert (bad.passed, bad.actual) == (False, 4)
    assert (broken.passed, broken.error, broken.verifier_type) == (
        False,
        "query failed: no such table",
        "database_state",
    )


def test_a_tool_check_needs_every_selected_tool_and_enough_calls():
    t = task(called("all", ["get_ticket", "close"]), called("many", minimum=3), called("missing", ["resolve"]))
    view = TrialView(tools_called=["get_ticket", "close"], final_answer="x")
    every, many, missing = run(t, [], view)
    assert (every.passed, every.details, every.actual) == (True, "2 calls", ["get_ticket", "close"])
    assert every.expected == {"selected_tools": ["get_ticket", "close"], "minimum_tool_calls": 1}
    assert (many.passed, many.details) == (False, "2 calls")
    assert (missing.passed, missing.details) == (False, "missing: ['resolve']")


def test_a_judged_check_without_a_judge_is_not_evaluated_and_says_why():
    (c,) = run(task(judged("j")), [{"rows": [{"x": 1}]}])
    assert (c.passed, c.details, c.verifier_type) == (None, f"not evaluated: {NEEDS_JUDGE}", "response_check")


def test_a_judged_check_fails_without_a_judge_where_nothing_is_there_to_judge():
    t = task(judged("answer"), judged("text", subject="query_result"), judged("broken"))
    results = [{"rows": [{"x": 1}]}, {"rows": []}, {"error": "bad sql"}]
    answer, text, broken = run(t, results, TrialView(final_answer="  \n"))
    assert (answer.passed, answer.details, answer.verifier_type) == (
        False,
        "the agent gave no final answer",
        "response_check",
    )
    assert (text.name, text.verifier_type, text.passed, text.details) == (
        "text",
        "response_check",
        False,
        "the query found no text to judge",
    )
    assert (broken.passed, broken.error, broken.verifier_type) == (False, "query failed: bad sql", "response_check")


def test_the_judge_gets_the_check_the_rows_the_answer_and_the_calls():
    judge = Judge(score=7)
    rows = [{"n": i} for i in range(205)]
    view = TrialView(final_answer="A" * 25000, calls=[{"tool": "close"}])
    (c,) = run(task(judged("j", minimum=7)), [{"rows": rows}], view, judge)
    ((prompt, data),) = judge.asked
    assert prompt == "check j"
    assert data["database"] == rows[:200] + [{"rows_not_shown": 5}]
    assert data["final_answer"] == "A" * 20000 and data["tool_calls"] == [{"tool": "close"}]
    assert (c.passed, c.expected, c.actual, c.details) == (True, 7, 7, "because")


def test_the_judge_of_written_text_gets_the_rows_as_the_text_and_a_low_score_fails():
    judge = Judge(score=6.5)
    (c,) = run(task(judged("j", subject="query_result")), [{"rows": [{"body": "article"}]}], None, judge)
    assert judge.asked[0][1] == {"text_to_judge": [{"body": "article"}], "tool_calls": []}
    assert c.passed is False


def test_a_judge_that_fails_is_the_checks_error():
    (c,) = run(task(judged("j")), [{"rows": [{"x": 1}]}], None, Judge(fail=True))
    assert (c.name, c.verifier_type, c.passed, c.error) == ("j", "response_check", False, "judge failed: judge down")


# -- reward and outcome ---------------------------------------------------------------------------


def check(name, passed, error=None):
    return Check(name, "database_state", passed, error=error)


@pytest.mark.parametrize(
    ("checks", "reward", "rewards", "outcome", "error"),
    [
        ([check("a", True), check("b", True)], 1.0, {"a": 1.0, "b": 1.0, "reward": 1.0}, Outcome.PASSED, None),
        ([check("a", True), check("b", False)], 0.0, {"a": 1.0, "b": 0.0, "reward": 0.0}, Outcome.FAILED, None),
        (
            [check("a", True), check("j", None)],
            None,
            {"a": 1.0},
            Outcome.UNJUDGED,
            f"j: {NEEDS_JUDGE}; every other check passed",
        ),
        ([check("a", False), check("j", None)], 0.0, {"a": 0.0, "reward": 0.0}, Outcome.FAILED, None),
        (
            [check("j", None), check("k", None)],
            None,
            {},
            Outcome.UNJUDGED,
            f"j, k: {NEEDS_JUDGE}; every other check passed",
        ),
        ([], 0.0, {"reward": 0.0}, Outcome.VERIFIER_ERROR, "tests/verifiers.json has no verifiers"),
        (
            [check("a", False, "query failed: x"), check("b", False, "judge failed: y")],
            0.0,
            {"a": 0.0, "b": 0.0, "reward": 0.0},
            Outcome.VERIFIER_ERROR,
            "a: query failed: x; b: judge failed: y",
        ),
    ],
)
def test_checks_become_a_reward_and_an_outcome(checks, reward, rewards, outcome, error):
    assert rewards_of(checks) == (reward, rewards)
    assert outcome_of(checks, reward) == (outcome, error)


def test_a_long_error_list_is_cut_at_2000_characters():
    checks = [check(f"c{i}", False, "e" * 100) for i in range(40)]
    outcome, error = outcome_of(checks, 0.0)
    assert outcome is Outcome.VERIFIER_ERROR and len(error) == 2000


def test_a_check_reports_its_fields_leaving_out_the_empty_ones_but_passed():
    assert Check("a", "database_state", None).to_json() == {
        "name": "a",
        "verifier_type": "database_state",
        "passed": None,
    }
    full = Check("a", "database_state", True, 1, 1, None, "equals: 1 vs 1").to_json()
    assert full == {
        "name": "a",
        "verifier_type": "database_state",
        "passed": True,
        "expected": 1,
        "actual": 1,
        "details": "equals: 1 vs 1",
    }
