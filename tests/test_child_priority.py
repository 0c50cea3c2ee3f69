"""Nothing started from a loop that goes first keeps its priority (child_processes.spawn,
loop_priority.py), in either mode.

A child inherits the nice value of the thread that forks it ("nice": spawn starts it behind
`nice -n K`, back at the base) and, without reset-on-fork, its real-time policy ("rt"). Without
either, a sandbox's processes (an agent's commands, a task's tests) would run above every host
process wherever no cpu cgroup holds them. A worker of the processes executor keeps the driver's
"nice" raise on purpose (its loop carries the turns) and must not pass it on. Each test runs its
loop in a thread of its own, started at a known nice value."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from agentmill.rollout.executor import make_executor
from agentmill.runtime.child_processes import spawn
from agentmill.runtime.loop_priority import CHOICE_ENV, LOOP_THREAD_RAISE, loop_first
from tests.rollout.test_process_executor import importable_tests  # noqa: F401  (workers import this module)
from tests.sandbox.helpers import in_sandbox
from tests.test_loop_priority import MAY_NICE, MAY_RT, START, in_a_thread, nice, policy

MODES = [
    pytest.param("rt", marks=pytest.mark.skipif(not MAY_RT, reason="may not make a thread real-time")),
    pytest.param("nice", marks=pytest.mark.skipif(not MAY_NICE, reason="may not raise a thread's priority")),
]
WHAT_A_CHILD_SEES = "nice; chrt -p $$ | head -1 | sed 's/.*: //'"  # its nice value, then its policy


def _first(main):
    """asyncio.run(main()) in a new thread that starts at START, inside loop_first.
    Returns (the loop thread's nice value and policy while first, what main returned)."""

    async def body():
        with loop_first():
            return (nice(), policy()), await main()

    return in_a_thread(asyncio.run, body())


async def _child_sees() -> list[str]:
    proc = await spawn("sh", "-c", WHAT_A_CHILD_SEES, stdout=subprocess.PIPE)
    out, _ = await proc.communicate()
    return out.decode().split("\n")[:2]


@pytest.mark.parametrize("mode", MODES)
def test_a_child_starts_normal_at_the_base(monkeypatch, mode):
    monkeypatch.setenv(CHOICE_ENV, mode)
    loop, child = _first(_child_sees)
    assert loop == (
        (START, os.SCHED_RR | os.SCHED_RESET_ON_FORK) if mode == "rt" else (START - LOOP_THREAD_RAISE, os.SCHED_OTHER)
    )
    assert child == [str(START), "SCHED_OTHER"], f"the child kept the loop's priority: {child}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.skipif(os.geteuid() != 0, reason="sandboxes drop to a uid of their own only as root")
def test_an_agent_in_a_sandbox_runs_normal_at_the_base_and_cannot_climb_back(monkeypatch, mode):
    monkeypatch.setenv(CHOICE_ENV, mode)
    # the agent's view, then attempts to take the loop's priority back for itself
    script = (
        f"{WHAT_A_CHILD_SEES}; renice -n -5 -p $$ >/dev/null 2>&1 && echo CLIMBED; "
        "chrt -r -p 1 $$ >/dev/null 2>&1 && echo REALTIME; nice -n -5 nice 2>/dev/null; true"
    )

    async def agent():
        return await in_sandbox(script)

    _, r = _first(agent)
    assert r.returncode == 0, r.stderr
    seen = r.stdout.split("\n")
    assert "CLIMBED" not in seen and "REALTIME" not in seen, r.stdout
    assert seen[:2] == [str(START), "SCHED_OTHER"], f"the sandbox kept the loop's priority: {r.stdout!r}"
    assert int(seen[2]) >= START, r.stdout


class LoopAndChild:
    """A job run by a worker: its loop thread's nice value and policy inside loop_first (as
    run_trial does for each trial), and what a child it starts (as a sandbox is) sees."""

    async def __call__(self, job: int):
        with loop_first():
            return job, os.getpid(), nice(), policy(), await _child_sees()

    def failure(self, job: int, message: str):
        return job, None, message, None, None


@pytest.mark.parametrize("mode", MODES)
def test_a_worker_ranks_its_loop_above_the_drivers_and_its_children_still_start_at_the_base(monkeypatch, mode):
    monkeypatch.setenv(CHOICE_ENV, mode)

    async def on_workers():
        return await make_executor("processes", concurrency=2, workers=2).map(LoopAndChild(), [0, 1])

    _, results = _first(on_workers)
    assert all(r[1] is not None for r in results), results
    if mode == "nice":  # the worker kept the driver's raise and raised its own loop from there
        assert {(r[2], r[3]) for r in results} == {(START - 2 * LOOP_THREAD_RAISE, os.SCHED_OTHER)}, results
    else:  # a normal process at the base, made real-time for its trials
        assert {(r[2], r[3]) for r in results} == {(START, os.SCHED_RR | os.SCHED_RESET_ON_FORK)}, results
    assert [r[4] for r in results] == [[str(START), "SCHED_OTHER"]] * 2, f"a worker's child kept a priority: {results}"
