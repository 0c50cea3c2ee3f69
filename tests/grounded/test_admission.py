"""Admission gates that the end-to-end test does not reach: the trial gate (infra failures are not
the teacher's doing) and the degenerate-trajectory gate (agentmill's trace filters), each planted;
and prompts are editable files."""

import asyncio

import pytest

from agentmill.grounded import prompts
from agentmill.grounded.admission import AdmissionPolicy, admit
from agentmill.grounded.records import Graph, Spec
from agentmill.grounded.teacher import TeacherRun
from agentmill.rollout import TrialResult
from agentmill.traces.atif import AgentInfo, Observation, ObservationResult, Step, ToolCall, Trajectory
from agentmill.verify import Outcome
from tests.grounded import scripted

SPEC = Spec.model_validate(scripted.SPEC)


def run_with(tmp_path, commands: list[tuple[str, str]], *, outcome=Outcome.PASSED, reward=1.0) -> TeacherRun:
    steps = [Step(step_id=1, source="user", message="task")]
    for i, (cmd, output) in enumerate(commands, 2):
        steps.append(
            Step(
                step_id=i,
                source="agent",
                message="{}",
                tool_calls=[ToolCall(tool_call_id=f"c{i}", function_name="terminal", arguments={"keystrokes": cmd})],
                observation=Observation(results=[ObservationResult(source_call_id=f"c{i}", content=output)]),
            )
        )
    traj = Trajectory(session_id="s", agent=AgentInfo(name="terminus", version="1"), steps=steps)
    result = TrialResult(task="t", task_hash="h", agent="terminus", agent_version="1", outcome=outcome, reward=reward)
    (tmp_path / "deliverables").mkdir(exist_ok=True)
    return TeacherRun(tmp_path, result, traj)


def decide(run, policy=None):
    # the judge is never reached by these runs: an unreachable endpoint proves it
    from agentmill.models import ModelClient

    async def go():
        c = ModelClient(base_url="http://127.0.0.1:9/v1", model="nobody", max_retries=0)
        try:
            return await admit(run, SPEC, Graph(nodes=[], edges=[]), run.folder, c, policy=policy)
        finally:
            await c.close()

    return asyncio.run(go())


def test_infra_failures_are_not_admitted_and_say_so(tmp_path):
    d = decide(run_with(tmp_path, [("ls\n", "a b")], outcome=Outcome.INFRA_ERROR, reward=None))
    assert (d.admitted, d.gate) == (False, "trial") and "infra_error" in d.reason


@pytest.mark.parametrize(
    "commands, rule",
    [
        ([("cat data.csv\n", "x")] * 12, "repeated commands"),
        (
            [(f"python3 s{i}.py\n", "Traceback (most recent call last):\n  boom") for i in range(6)] + [("ls\n", "ok")],
            "error rate",
        ),
        ([(f"cat big{i}\n", "x [... 5000 characters omitted ...] y") for i in range(7)], "truncated"),
        ([(f"echo {i}\n", str(i)) for i in range(41)], "commands > 40"),
    ],
)
def test_degenerate_trajectories_are_dropped_by_the_trace_filters(tmp_path, commands, rule):
    d = decide(run_with(tmp_path, commands), AdmissionPolicy(max_commands=40))
    assert (d.admitted, d.gate) == (False, "degenerate") and rule in d.reason, d.reason


def test_a_clean_run_with_failed_checks_stops_at_the_checks(tmp_path):
    run = run_with(tmp_path, [("ls\n", "ok")], outcome=Outcome.FAILED, reward=0.0)
    run.result.verifier_stdout = "PASS summary.csv: exists: 10 bytes\nFAIL memo.md: exists: missing\n"
    d = decide(run)
    assert d.gate == "checks" and "memo.md: exists: missing" in d.reason


def test_prompts_are_editable_files(tmp_path):
    assert "{{seed}}" in (prompts.HERE / "assemble.md").read_text()
    (tmp_path / "assemble.md").write_text("Mine: {{seed}}")
    assert prompts.render("assemble", tmp_path, seed="S") == "Mine: S"
    with pytest.raises(Exception, match="judge_anchored.md"):
        prompts.render("judge_anchored", tmp_path)
