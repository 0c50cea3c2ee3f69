"""open_files.py: a process that runs trials raises its soft open-files limit, in a fresh process
started with a low one (what `run_trial` calls first)."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

PROBE = ("import resource; from agentmill.open_files import allow_open_files; "
         "got = allow_open_files(); print(got, *resource.getrlimit(resource.RLIMIT_NOFILE))")


def _in_a_process_with(soft: int, hard: int) -> list[int]:
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    out = subprocess.run([sys.executable, "-c", PROBE], preexec_fn=lower, capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


def test_the_soft_limit_goes_up_to_the_hard_one():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the hard limit here ({hard}) leaves nothing to show")
    ceiling = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    got, soft, new_hard = _in_a_process_with(256, ceiling)
    assert got == soft == new_hard == ceiling


def test_a_soft_limit_already_at_the_hard_one_is_left_alone():
    got, soft, hard = _in_a_process_with(300, 300)
    assert got == soft == hard == 300
