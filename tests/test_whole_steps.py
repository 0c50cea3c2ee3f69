"""whole_step: a cancel never cuts a step in half (planted: with asyncio.to_thread the first test
finds the step still running after the cancel, and the rollout test finds a folder without its row)."""

import asyncio
import sqlite3
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from agentmill.agents.registry import agent_class
from agentmill.rollout import runner
from agentmill.rollout.config import RolloutConfig
from agentmill.runtime.whole_steps import whole_step
from agentmill.tasks import load_task
from tests.conftest import sandbox, simple_task


@pytest.mark.parametrize("cancels", [1, 2])  # a second cancel must not cut the wait short either
def test_a_cancel_after_the_step_began_waits_for_its_end(cancels):
    began, parts = threading.Event(), []

    def step():
        began.set()
        parts.append("first")
        time.sleep(0.3)
        parts.append("second")

    async def main():
        task = asyncio.create_task(whole_step(step))
        await asyncio.to_thread(began.wait)
        for _ in range(cancels):
            task.cancel()
            await asyncio.sleep(0)
        with pytest.raises(asyncio.CancelledError):
            await task
        return list(parts)  # what had happened when the cancel came through

    assert asyncio.run(main()) == ["first", "second"]


async def _asked_then_cancelled(fn, *args) -> None:
    """whole_step(fn, *args), cancelled 50 ms after it was asked for."""
    task = asyncio.create_task(whole_step(fn, *args))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_cancel_before_the_step_began_means_it_never_runs():
    ran, release = [], threading.Event()

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1))
        blocker = loop.run_in_executor(None, release.wait)  # the only thread is busy
        await _asked_then_cancelled(ran.append, "ran")
        release.set()
        await blocker
        await asyncio.to_thread(time.sleep, 0.05)  # the thread is free: the abandoned step would run now
        return list(ran)

    assert asyncio.run(main()) == []


class TakenUpLate(ThreadPoolExecutor):  # asyncio takes only these as a default executor
    """A thread that has taken the call (its future is running, so a cancel cannot stop it) but
    has not begun it yet: the window between a worker's claim and the step's first line."""

    def __init__(self, go: threading.Event):
        super().__init__(1)
        self.go = go

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        future.set_running_or_notify_cancel()

        def later():
            self.go.wait()
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the waiter
                future.set_exception(e)

        threading.Thread(target=later, daemon=True).start()
        return future


def test_a_cancel_in_the_window_before_the_step_begins_still_means_it_never_runs():
    ran, go = [], threading.Event()

    async def main():
        asyncio.get_running_loop().set_default_executor(TakenUpLate(go))
        await _asked_then_cancelled(ran.append, "ran")
        go.set()
        await asyncio.sleep(0.2)
        return list(ran)

    assert asyncio.run(main()) == []


def test_the_steps_result_and_errors_come_back():
    assert asyncio.run(whole_step(sum, [1, 2, 3])) == 6
    with pytest.raises(ZeroDivisionError):
        asyncio.run(whole_step(lambda: 1 / 0))


@sandbox
def test_a_cancelled_rollout_leaves_no_trial_folder_without_its_row(tmp_path, monkeypatch):
    tasks = [
        load_task(simple_task(tmp_path / "ds", f"t{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n"))
        for i in range(3)
    ]
    config = RolloutConfig(
        dataset=str(tmp_path / "ds"),
        agent="oracle",
        agent_version=agent_class("oracle").version,
        concurrency=1,
    )
    published = threading.Event()
    real_write = runner._write_trial

    def slow_after_publish(*args):  # the folder is in place and the row not yet written: a late disk
        real_write(*args)
        published.set()
        time.sleep(0.5)

    monkeypatch.setattr(runner, "_write_trial", slow_after_publish)
    run = tmp_path / "run"

    async def main():
        rollout = asyncio.create_task(runner.run_rollout(config, tasks, run))
        await asyncio.to_thread(published.wait, 120)
        rollout.cancel()
        with pytest.raises(asyncio.CancelledError):
            await rollout

    asyncio.run(main())
    folders = sorted(p.name for p in (run / "trials").iterdir() if not p.name.startswith("."))
    db = sqlite3.connect(run / "ledger.sqlite")
    done = sorted(r[0] for r in db.execute("SELECT trial_id FROM trials WHERE state='done'"))
    assert folders and folders == done
