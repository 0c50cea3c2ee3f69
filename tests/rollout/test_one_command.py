"""Agents whose run is one command (the oracle, the nop) get a sandbox that is that command's whole
life, with no guest server booted (sandbox/command.py); every other agent and every tool task
still get a started one. Counted where sandboxes actually start: BwrapSandbox's two entry points."""

from __future__ import annotations

import asyncio

import pytest

from agentmill.agents.base import AgentResult, ScriptedAgentBase
from agentmill.agents.nop import NopAgent
from agentmill.agents.oracle import OracleAgent
from agentmill.rollout import run_trial
from agentmill.sandbox.bwrap import BwrapSandbox
from agentmill.tasks import load_task
from agentmill.verify import Outcome
from tests.conftest import sandbox, simple_task

pytestmark = sandbox


class EchoAgent(ScriptedAgentBase):
    """Two commands: an agent that must get a started sandbox."""

    name = "echo-twice"

    async def run(self, task, sb, result: AgentResult) -> None:
        await sb.exec("echo hel > /app/out.txt")
        await sb.exec("sed -i s/hel/hello/ /app/out.txt")


@pytest.fixture
def boots(monkeypatch):
    counts = {"guest": 0, "command": 0}
    real_start, real_command = BwrapSandbox.start, BwrapSandbox.start_command

    async def start(self):
        counts["guest"] += 1
        await real_start(self)

    async def start_command(self, *a, **kw):
        counts["command"] += 1
        return await real_command(self, *a, **kw)

    monkeypatch.setattr(BwrapSandbox, "start", start)
    monkeypatch.setattr(BwrapSandbox, "start_command", start_command)
    return counts


@pytest.mark.parametrize(
    "agent, outcome, counted",
    [
        (OracleAgent(), Outcome.PASSED, {"guest": 0, "command": 2}),  # solve.sh, then test.sh
        (NopAgent(), Outcome.FAILED, {"guest": 0, "command": 1}),  # test.sh alone
        (EchoAgent(), Outcome.PASSED, {"guest": 1, "command": 1}),  # a started sandbox, then test.sh
    ],
)
def test_one_command_agents_boot_no_guest(tmp_path, builder, boots, agent, outcome, counted):
    task = load_task(simple_task(tmp_path))
    r = asyncio.run(run_trial(task, agent, builder))
    assert r.outcome is outcome, (r.exception, r.verifier_stdout, r.verifier_stderr)
    assert boots == counted


def test_the_oracles_trajectory_records_what_ran(tmp_path, builder):
    task = load_task(simple_task(tmp_path, solve_sh="echo hello > /app/out.txt; echo said it; exit 0\n"))
    result = AgentResult()
    r = asyncio.run(run_trial(task, OracleAgent(), builder, agent_result=result))
    assert r.outcome is Outcome.PASSED
    [step] = result.steps
    assert step.extra == {"executed_as": "bash /solution/solve.sh"}
    assert step.observation.results[0].content == "said it\n"
    assert result.metadata["solution_exit_code"] == 0


def test_a_solution_past_the_agent_timeout_is_the_agents_timeout(tmp_path, builder):
    from agentmill.tasks import TaskConfig

    cfg = TaskConfig.model_validate({"agent": {"timeout_sec": 1}})
    task = load_task(simple_task(tmp_path, solve_sh="sleep 30\n", config=cfg))
    r = asyncio.run(run_trial(task, OracleAgent(), builder))
    assert r.outcome is Outcome.AGENT_TIMEOUT and r.timings.total < 10
