"""Nothing started from a raised loop thread keeps the raise (child_processes.spawn, loops.loop_first).

A child inherits the nice value of the thread that forks it, and loop_first raises the loop's
thread where the process may. Without spawn's reset a sandbox's processes (an agent's commands,
a task's tests) would run above every host process wherever no cpu cgroup holds them, and a worker
of the processes executor (which keeps the driver's raise on purpose) would pass its own on. Each
test runs its loop in a thread of its own, started at a known nice value, so the test process's
threads are untouched."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading

import pytest

from agentmill.child_processes import spawn
from agentmill.loops import LOOP_THREAD_RAISE, loop_first
from agentmill.rollout.executor import make_executor
from tests.rollout.test_process_executor import importable_tests  # noqa: F401  (workers import this module)
from tests.sandbox.helpers import in_sandbox
from tests.test_file_threads import _may_raise_priority

BASE = 3  # where each test's loop thread starts: any value two raises can go below

needs_raise = pytest.mark.skipif(not _may_raise_priority(), reason="this process may not raise a thread's priority")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _raised_loop(main):
    """asyncio.run(main()) in a new thread that starts at BASE; loop_first raises it first.
    Returns (the loop thread's nice value after the raise, what main returned)."""
    out = {}

    def body():
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BASE)

        async def first():
            loop_first()
            return _nice(), await main()

        out["value"] = asyncio.run(asyncio.wait_for(first(), 120))

    t = threading.Thread(target=body)
    t.start()
    t.join()
    return out["value"]


@needs_raise
def test_a_child_starts_where_the_loop_thread_began_not_where_it_was_raised():
    async def child_nice():
        proc = await spawn("nice", stdout=subprocess.PIPE)  # `nice` alone prints its own value
        out, _ = await proc.communicate()
        return proc.pid, int(out)

    loop_nice, (pid, child) = _raised_loop(child_nice)
    assert loop_nice == BASE - LOOP_THREAD_RAISE
    assert child == BASE, f"the child kept the loop's raise ({child})"
    assert pid > 0


@needs_raise
@pytest.mark.skipif(os.geteuid() != 0, reason="sandboxes drop to a uid of their own only as root")
def test_an_agent_in_a_sandbox_runs_at_the_base_and_cannot_climb_back():
    # the agent's view: its own value, then an attempt to take the loop's raise back for itself
    script = "nice; renice -n -5 -p $$ >/dev/null 2>&1 && echo CLIMBED; nice -n -5 nice 2>/dev/null; true"

    async def agent():
        return await in_sandbox(script)

    loop_nice, r = _raised_loop(agent)
    assert loop_nice == BASE - LOOP_THREAD_RAISE
    assert r.returncode == 0, r.stderr
    seen = r.stdout.split()
    assert "CLIMBED" not in seen, r.stdout
    assert seen and all(int(v) >= BASE for v in seen), f"sandbox ran above the base {BASE}: {r.stdout!r}"
    assert int(seen[0]) == BASE


class LoopNice:
    """A job run by a worker: the nice value of the worker's loop thread once loop_first ran there
    (as run_trial does for each trial), and of a child it starts (as a sandbox is)."""

    async def __call__(self, job: int):
        loop_first()
        proc = await spawn("nice", stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        return job, os.getpid(), _nice(), int(out)

    def failure(self, job: int, message: str):
        return job, None, message, None


@needs_raise
def test_a_worker_ranks_its_loop_above_the_drivers_and_its_children_still_start_at_the_base():
    async def run_on_workers():
        return await make_executor("processes", concurrency=2, workers=2).map(LoopNice(), [0, 1])

    driver, results = _raised_loop(run_on_workers)
    assert driver == BASE - LOOP_THREAD_RAISE
    assert all(r[1] is not None for r in results), results
    assert {r[2] for r in results} == {BASE - 2 * LOOP_THREAD_RAISE}, f"workers' loops: {results}"
    assert {r[3] for r in results} == {BASE}, f"a worker's child kept a raise: {results}"
