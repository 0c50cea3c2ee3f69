"""open_files.py: a process that runs trials raises its soft open-files limit to the hard one,
checked in a fresh process started with a low one and through run_trial itself."""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys

import pytest

from agentmill.agents import OracleAgent
from agentmill.images import ImageBuilder
from agentmill.rollout import run_trial
from agentmill.runtime import open_files
from agentmill.tasks import load_task
from tests.conftest import sandbox, scratch_cache, simple_task

PROBE = (
    "import resource; from agentmill.runtime.open_files import allow_open_files; "
    "got = allow_open_files(); print(got, *resource.getrlimit(resource.RLIMIT_NOFILE))"
)
_, HARD = resource.getrlimit(resource.RLIMIT_NOFILE)
room_to_raise = pytest.mark.skipif(
    HARD != resource.RLIM_INFINITY and HARD < 2048, reason=f"the hard limit here ({HARD}) leaves nothing to show"
)


def _in_a_process_with(soft: int, hard: int) -> list[int]:
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    out = subprocess.run([sys.executable, "-c", PROBE], preexec_fn=lower, capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


@room_to_raise
def test_the_soft_limit_goes_up_to_the_hard_one():
    ceiling = 4096 if HARD == resource.RLIM_INFINITY else min(HARD, 4096)
    got, soft, new_hard = _in_a_process_with(256, ceiling)
    assert got == soft == new_hard == ceiling


def test_a_soft_limit_already_at_the_hard_one_is_left_alone():
    got, soft, hard = _in_a_process_with(300, 300)
    assert got == soft == hard == 300


@sandbox
@room_to_raise
def test_a_trial_raises_it(tmp_path, monkeypatch):
    """This process's soft limit, lowered for the test, is at the hard one after run_trial."""
    monkeypatch.setattr(open_files, "_raised", False)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        task = load_task(simple_task(tmp_path))
        result = asyncio.run(run_trial(task, OracleAgent(), ImageBuilder(cache=scratch_cache(tmp_path))))
        now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert result.passed, result.outcome
    assert now == (open_files.CEILING if hard == resource.RLIM_INFINITY else min(hard, open_files.CEILING))
