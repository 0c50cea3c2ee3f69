"""Whole trials on crafted tasks: every typed outcome, verifier output kept."""

import asyncio

from agentmill.agents import NopAgent, OracleAgent
from agentmill.agents.base import AgentResult
from agentmill.images import ImageBuilder
from agentmill.rollout import run_trial
from agentmill.tasks import TaskConfig, load_task
from agentmill.traces import Step
from agentmill.verify import Outcome
from tests.conftest import REWARD_IF, sandbox, scratch_cache, simple_task

pytestmark = sandbox


def trial(tmp_path, agent, **task_kw):
    task = load_task(simple_task(tmp_path, **task_kw))
    return asyncio.run(run_trial(task, agent, ImageBuilder(cache=scratch_cache(tmp_path))))


def test_oracle_passes_and_nop_fails(tmp_path):
    ok = trial(tmp_path, OracleAgent())
    assert ok.outcome is Outcome.PASSED and ok.reward == 1.0
    assert ok.timings.sandbox_start > 0 and ok.timings.verifier > 0 and ok.timings.total >= ok.timings.agent
    nop = trial(tmp_path, NopAgent())
    assert nop.outcome is Outcome.FAILED and nop.reward == 0.0


def test_no_reward_written_is_verifier_error_with_output_kept(tmp_path):
    r = trial(tmp_path, OracleAgent(), test_sh="echo checking stuff; echo oops >&2; exit 0\n")
    assert r.outcome is Outcome.VERIFIER_ERROR and r.reward is None
    assert "checking stuff" in r.verifier_stdout and "oops" in r.verifier_stderr
    assert "wrote no" in r.exception


def test_garbage_reward_is_verifier_error(tmp_path):
    r = trial(tmp_path, OracleAgent(), test_sh="echo 'all good!' > /logs/verifier/reward.txt\n")
    assert r.outcome is Outcome.VERIFIER_ERROR and "not a number" in r.exception


def test_reward_json_partial_credit(tmp_path):
    r = trial(tmp_path, OracleAgent(), test_sh='echo \'{"reward": 0.5, "lint": 1}\' > /logs/verifier/reward.json\n')
    assert r.outcome is Outcome.FAILED and r.reward == 0.5 and r.rewards == {"reward": 0.5, "lint": 1.0}


def test_verifier_timeout(tmp_path):
    cfg = TaskConfig.model_validate({"verifier": {"timeout_sec": 1}})
    r = trial(tmp_path, OracleAgent(), test_sh="sleep 30\n", config=cfg)
    assert r.outcome is Outcome.VERIFIER_TIMEOUT


def test_agent_timeout_still_verified(tmp_path):
    cfg = TaskConfig.model_validate({"agent": {"timeout_sec": 1}})
    r = trial(tmp_path, OracleAgent(), solve_sh="echo hello > /app/out.txt; sleep 30\n", config=cfg)
    assert r.outcome is Outcome.AGENT_TIMEOUT and r.reward == 1.0
    assert r.timings.agent < 10


def test_agent_error_is_typed(tmp_path):
    class Crashing:
        name, version, needs_solution = "crash", "0", False

        async def run(self, task, sandbox, result: AgentResult):
            result.steps.append(Step(step_id=1, source="agent", message="about to fail"))
            raise RuntimeError("model produced nonsense")

    result = AgentResult()
    task = load_task(simple_task(tmp_path))
    r = asyncio.run(run_trial(task, Crashing(), ImageBuilder(cache=scratch_cache(tmp_path)), agent_result=result))
    assert r.outcome is Outcome.AGENT_ERROR and "model produced nonsense" in r.exception
    assert result.steps[0].message == "about to fail"  # the partial trajectory survives


def test_an_agent_that_kills_its_own_sandbox_is_an_agent_error_not_infra(tmp_path):
    class Killer:
        name, version, needs_solution = "killer", "0", False

        async def run(self, task, sandbox, result: AgentResult):
            result.steps.append(Step(step_id=1, source="agent", message="kill everything"))
            await sandbox.exec("kill -9 -1")  # the guest server dies with the agent's processes
            await sandbox.exec("echo still here?")

    task = load_task(simple_task(tmp_path))
    r = asyncio.run(run_trial(task, Killer(), ImageBuilder(cache=scratch_cache(tmp_path))))
    assert r.outcome is Outcome.AGENT_ERROR and not r.outcome.is_infra, (r.outcome, r.exception)
    assert "died under the agent's commands" in r.exception and r.reward is None


def test_a_sandbox_that_fails_before_the_agent_acts_is_infra(tmp_path):
    from agentmill.errors import SandboxError

    class Unlucky:
        name, version, needs_solution = "unlucky", "0", False

        async def run(self, task, sandbox, result):
            raise SandboxError("tmux new-session failed (-9)")  # as under heavy oversubscription

    r = trial(tmp_path, Unlucky())
    assert (
        r.outcome is Outcome.SANDBOX_ERROR and r.outcome.is_infra and "sandbox failed during the agent" in r.exception
    )


def test_needs_container_is_sandbox_error_with_reason(tmp_path):
    r = trial(tmp_path, NopAgent(), dockerfile="FROM alpine:3.19\n")
    assert r.outcome is Outcome.SANDBOX_ERROR and "container backend" in r.exception


def test_a_failing_dockerfile_step_is_the_tasks_fault_not_infra(tmp_path):
    r = trial(tmp_path, OracleAgent(), dockerfile="FROM ubuntu:24.04\nRUN echo about-to-fail && exit 3\n")
    assert r.outcome is Outcome.TASK_ERROR and not r.outcome.is_infra  # `--retry infra` must not rerun it
    assert "exit" in r.exception or "about-to-fail" in r.exception


def test_agent_never_sees_tests_or_solution(tmp_path):
    class Snoop:
        name, version, needs_solution = "snoop", "0", False

        async def run(self, task, sandbox, result):
            r = await sandbox.exec(
                "ls /tests /solution 2>&1; find / -name test.sh -o -name solve.sh 2>/dev/null | grep -v ^/proc"
            )
            result.metadata["seen"] = r.stdout

    result = AgentResult()
    task = load_task(simple_task(tmp_path))
    asyncio.run(run_trial(task, Snoop(), ImageBuilder(cache=scratch_cache(tmp_path)), agent_result=result))
    assert "test.sh" not in result.metadata["seen"] and "solve.sh" not in result.metadata["seen"]


def test_agent_cannot_forge_the_reward(tmp_path):
    class Forger:
        name, version, needs_solution = "forger", "0", False

        async def run(self, task, sandbox, result):
            await sandbox.exec(
                "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt; "
                "(while :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.05; done) &"
            )

    test_sh = "sleep 0.5; " + REWARD_IF.format(cond="grep -qx hello /app/out.txt").split("\n", 1)[1]
    task = load_task(simple_task(tmp_path, test_sh=test_sh))
    r = asyncio.run(run_trial(task, Forger(), ImageBuilder(cache=scratch_cache(tmp_path))))
    assert r.outcome is Outcome.FAILED and r.reward == 0.0


def test_legacy_exit_status_verdict(tmp_path):
    root = tmp_path / "legacy"
    (root / "tests").mkdir(parents=True)
    (root / "task.yaml").write_text("instruction: Create /app/done.\n")
    (root / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /app\n")
    (root / "solution.sh").write_text("touch /app/done\n")
    (root / "run-tests.sh").write_text(
        'test -f /app/done && test "$TEST_DIR" = /tests && test -f $TEST_DIR/check.txt\n'
    )
    (root / "tests" / "check.txt").write_text("x")
    task = load_task(root)
    builder = ImageBuilder(cache=scratch_cache(tmp_path))
    ok = asyncio.run(run_trial(task, OracleAgent(), builder))
    nop = asyncio.run(run_trial(task, NopAgent(), builder))
    assert (ok.outcome, ok.reward) == (Outcome.PASSED, 1.0)
    assert (nop.outcome, nop.reward) == (Outcome.FAILED, 0.0)
