"""A rollout's report keeps bounded memory per trial: each result's verifier output is cut to its
tail once the trial folder holds all of it (a long run must not keep every verifier's output)."""

import asyncio

from agentmill.agents.registry import agent_class
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.runner import REPORT_OUTPUT_CHARS, run_rollout, slim_result
from agentmill.tasks import load_task
from tests.conftest import REWARD_IF, sandbox, simple_task

LOUD = "python3 -c \"print('v' * 200000)\"\n" + REWARD_IF.format(cond="grep -qx hello /app/out.txt")


@sandbox
def test_report_keeps_the_tail_and_the_folder_keeps_everything(tmp_path):
    task = load_task(simple_task(tmp_path / "ds", test_sh="#!/bin/bash\n" + LOUD))
    config = RolloutConfig(
        dataset=str(tmp_path / "ds"),
        agent="oracle",
        agent_version=agent_class("oracle").version,
        concurrency=1,
    )
    report = asyncio.run(run_rollout(config, [task], tmp_path / "run", keep_results=True))
    [result] = report.results
    assert result.passed, result.exception
    full = (tmp_path / "run" / "trials" / result.trial_id / "verifier" / "stdout.txt").read_text()
    assert len(full) > 8 * REPORT_OUTPUT_CHARS  # the verifier keeps up to 64 KiB of each stream
    assert len(result.verifier_stdout) == REPORT_OUTPUT_CHARS and full.endswith(result.verifier_stdout)


def test_slim_leaves_short_output_alone():
    from agentmill.rollout.result import TrialResult
    from agentmill.verify.outcome import Outcome

    r = TrialResult(
        task="t",
        task_hash="h",
        agent="a",
        agent_version="1",
        outcome=Outcome.PASSED,
        verifier_stdout="ok\n",
        verifier_stderr="x" * (REPORT_OUTPUT_CHARS + 10),
    )
    slim = slim_result(r)
    assert slim.verifier_stdout == "ok\n" and slim.verifier_stderr == "x" * REPORT_OUTPUT_CHARS
    assert slim_result(slim) is slim
