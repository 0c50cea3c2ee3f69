"""A loop that runs trials goes first while they run (loop_priority.py): its thread real-time
("rt", SCHED_RR 1 with reset-on-fork) where the process may and the kernel throttles real time,
else LOOP_THREAD_RAISE nice steps higher ("nice"), else as it was; its file threads at
FILE_THREAD_NICE; and, when the last trial on the thread ends, the thread gets its policy and nice
value back. Loops run in threads of their own here, each started at a known nice value, so the
test process's threads are untouched."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.runtime import loop_priority
from agentmill.runtime.loop_priority import (
    CHOICE_ENV,
    FILE_THREAD_NICE,
    LOOP_RT_PRIORITY,
    LOOP_THREAD_RAISE,
    REMOVAL_THREAD_NICE,
    loop_first,
    mode_here,
    trials_first,
)
from tests.conftest import sandbox

START = 3  # where each test's loop thread starts: any value two raises can go below


def nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def policy() -> int:
    return os.sched_getscheduler(threading.get_native_id())


def where() -> tuple[str, int, int]:
    return threading.current_thread().name, nice(), policy()


def in_a_thread(fn, *args, start: int | None = START):
    """fn(*args) in a new thread (asyncio.run there: a loop of its own) that starts at nice `start`."""
    out = {}

    def body():
        if start is not None:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), start)
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - raised again in the test's thread
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def may(mode: str) -> bool:
    async def probe():
        with loop_first():
            return mode_here()

    old = os.environ.get(CHOICE_ENV)
    os.environ[CHOICE_ENV] = mode
    try:
        return in_a_thread(asyncio.run, probe()) == mode
    finally:
        os.environ.pop(CHOICE_ENV) if old is None else os.environ.__setitem__(CHOICE_ENV, old)


MAY_RT, MAY_NICE = may("rt"), may("nice")
needs_rt = pytest.mark.skipif(not MAY_RT, reason="this process may not make a thread real-time")
needs_nice = pytest.mark.skipif(not MAY_NICE, reason="this process may not raise a thread's priority")
RR_RESET = os.SCHED_RR | os.SCHED_RESET_ON_FORK


def test_file_work_runs_below_the_loop_thread_even_after_asyncio_made_its_own_executor():
    async def main():
        await asyncio.to_thread(where)  # asyncio makes its default executor here
        with loop_first():
            return (
                nice(),
                await asyncio.to_thread(where),
                await asyncio.gather(*(asyncio.to_thread(where) for _ in range(8))),
            )

    loop_nice, (name, file_nice, file_policy), many = in_a_thread(asyncio.run, main())
    assert loop_nice <= START, "the loop's own thread was lowered"
    assert file_nice == FILE_THREAD_NICE and name.startswith("agentmill-files")
    assert file_policy == os.SCHED_OTHER, "a file thread took the loop's real-time policy"
    assert {n for _, n, _ in many} == {FILE_THREAD_NICE}


def test_an_executor_someone_chose_is_kept():
    async def main():
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1, thread_name_prefix="theirs"))
        with loop_first():
            return await asyncio.to_thread(where)

    name, file_nice, _ = in_a_thread(asyncio.run, main())
    assert name.startswith("theirs") and file_nice != FILE_THREAD_NICE


@needs_rt
def test_rt_the_loop_thread_is_real_time_while_trials_run_and_normal_again_after(monkeypatch):
    monkeypatch.setenv(CHOICE_ENV, "rt")
    seen = []

    @trials_first
    async def trial(i):
        seen.append((policy(), os.sched_getparam(threading.get_native_id()).sched_priority, nice()))
        await asyncio.sleep(0.05 * i)  # overlapping trials: the first to end must not put it back
        seen.append((policy(), nice()))

    async def main():
        await asyncio.gather(*(trial(i) for i in range(3)))
        return where()

    def twice():
        return asyncio.run(main()), asyncio.run(main())  # a second loop in the same thread: the same again

    after = in_a_thread(twice)
    assert [s for s in seen if len(s) == 3] == [(RR_RESET, LOOP_RT_PRIORITY, START)] * 6
    assert [s for s in seen if len(s) == 2] == [(RR_RESET, START)] * 6, "put back while a trial still ran"
    assert [a[1:] for a in after] == [(START, os.SCHED_OTHER)] * 2, "the thread stayed real-time after its trials"


@needs_rt
def test_rt_is_not_used_where_the_kernel_does_not_throttle_real_time(monkeypatch):
    monkeypatch.setenv(CHOICE_ENV, "rt")
    monkeypatch.setattr(loop_priority, "_real_time_is_throttled", lambda: False)

    async def main():
        with loop_first():
            return mode_here(), policy(), nice()

    mode, pol, n = in_a_thread(asyncio.run, main())
    assert pol == os.SCHED_OTHER and mode == ("nice" if MAY_NICE else None)
    assert n == (START - LOOP_THREAD_RAISE if MAY_NICE else START)


def test_the_throttle_is_read_from_the_kernels_setting(tmp_path):
    setting = tmp_path / "sched_rt_runtime_us"
    for text, throttled in [("950000\n", True), ("0\n", True), ("-1\n", False), ("", False)]:
        setting.write_text(text)
        assert loop_priority._real_time_is_throttled.__wrapped__(setting) is throttled, text
    assert loop_priority._real_time_is_throttled.__wrapped__(tmp_path / "absent") is False


@needs_nice
def test_nice_the_loop_thread_goes_up_once_from_where_it_was_and_back_after(monkeypatch):
    monkeypatch.setenv(CHOICE_ENV, "nice")

    async def main():
        with loop_first():
            with loop_first():  # nested: the outermost decides
                inner = nice()
            return nice(), inner

    def from_(start):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), start)
        return asyncio.run(main()), asyncio.run(main()), nice()

    assert in_a_thread(from_, 0) == ((-LOOP_THREAD_RAISE,) * 2, (-LOOP_THREAD_RAISE,) * 2, 0)
    # `nice -n 10 agentmill`: still 5 steps above where it began, and back at 10 afterwards
    assert in_a_thread(from_, 10) == ((10 - LOOP_THREAD_RAISE,) * 2, (10 - LOOP_THREAD_RAISE,) * 2, 10)


def test_off_leaves_the_loop_thread_as_it_was_and_a_bad_choice_is_named(monkeypatch):
    async def main():
        with loop_first():
            return mode_here(), nice(), policy()

    monkeypatch.setenv(CHOICE_ENV, "off")
    assert in_a_thread(asyncio.run, main()) == (None, START, os.SCHED_OTHER)
    monkeypatch.setenv(CHOICE_ENV, "fast")
    with pytest.raises(AgentmillError, match=f"{CHOICE_ENV}='fast'.*rt, nice, off"):
        in_a_thread(asyncio.run, main())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_without_the_privilege_the_loop_thread_stays_and_the_file_threads_are_still_lowered():
    probe = (
        "import asyncio, os, threading\n"
        "from agentmill.runtime.loop_priority import loop_first, mode_here\n"
        "def nice(): return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())\n"
        "async def main():\n"
        "    with loop_first():\n"
        "        return mode_here(), os.sched_getscheduler(0), nice(), await asyncio.to_thread(nice)\n"
        "print(*asyncio.run(main()))\n"
    )
    r = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        env={**os.environ, CHOICE_ENV: "rt"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [
        "None",
        str(os.SCHED_OTHER),
        str(os.getpriority(os.PRIO_PROCESS, 0)),
        str(FILE_THREAD_NICE),
    ]


@sandbox
def test_a_finished_trials_scratch_is_removed_on_the_lowest_threads_before_the_trial_returns(tmp_path, monkeypatch):
    """Its removal queues behind no running trial's file work, and competes with none of it."""
    from agentmill.agents.oracle import OracleAgent
    from agentmill.images import ImageBuilder
    from agentmill.rollout import run_trial
    from agentmill.rollout import trial as trial_module
    from agentmill.tasks import load_task
    from tests.conftest import scratch_cache, simple_task

    removed = []
    real_remove = trial_module.remove_folder  # unmounts the trial's disk quota, then removes the tree

    def remove_folder(path, *args, **kw):
        removed.append((str(path), *where()))
        return real_remove(path, *args, **kw)

    monkeypatch.setattr(trial_module, "remove_folder", remove_folder)
    task = load_task(simple_task(tmp_path))
    result = in_a_thread(
        lambda: asyncio.run(run_trial(task, OracleAgent(), ImageBuilder(cache=scratch_cache(tmp_path))))
    )
    assert result.passed, result.exception
    scratch = [r for r in removed if Path(r[0]).name.startswith(f"trial-{os.getpid()}-")]
    assert len(scratch) == 1, removed
    path, thread, thread_nice, _ = scratch[0]
    assert thread.startswith("agentmill-removals") and thread_nice == REMOVAL_THREAD_NICE
    assert not Path(path).exists()  # gone by the time the trial returned
