"""A loop that runs trials goes first (loops.loop_first): its own thread LOOP_THREAD_RAISE steps
higher where the process may raise it (once per thread; left as it is without the privilege), its
file-work threads at FILE_THREAD_NICE, asyncio's lazily made executor included; an executor someone
chose is kept as it is. Loops run in threads of their own here, so the test's thread is untouched."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentmill.loops import FILE_THREAD_NICE, LOOP_THREAD_RAISE, loop_first


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _where() -> tuple[str, int]:
    return threading.current_thread().name, _nice()


def _in_a_thread(fn, *args):
    """fn(*args) in a new thread (asyncio.run there: a loop of its own), so priorities set for the
    loop's thread go with that thread."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("value", fn(*args)))
    t.start()
    t.join()
    return out["value"]


def _may_raise_priority() -> bool:
    def probe():
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _nice() - 1)
        except OSError:
            return False
        return True
    return _in_a_thread(probe)


@pytest.fixture(autouse=True)
def _not_already_lowered():
    if os.getpriority(os.PRIO_PROCESS, 0) >= FILE_THREAD_NICE:
        pytest.skip("this process already runs at the file threads' nice value or lower priority")


def test_file_work_runs_below_the_loop_thread_even_after_asyncio_made_its_own_executor():
    async def main():
        await asyncio.to_thread(_where)  # asyncio makes its default executor here
        loop_first()
        return _nice(), await asyncio.to_thread(_where), await asyncio.gather(*(asyncio.to_thread(_where) for _ in range(8)))

    loop_nice, (name, nice), many = _in_a_thread(asyncio.run, main())
    assert loop_nice <= os.getpriority(os.PRIO_PROCESS, 0), "the loop's own thread was lowered"
    assert nice == FILE_THREAD_NICE and name.startswith("agentmill-files")
    assert {n for _, n in many} == {FILE_THREAD_NICE}


def test_an_executor_someone_chose_is_kept():
    async def main():
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1, thread_name_prefix="theirs"))
        loop_first()
        return await asyncio.to_thread(_where)

    name, nice = _in_a_thread(asyncio.run, main())
    assert name.startswith("theirs") and nice != FILE_THREAD_NICE


def test_each_loop_gets_its_own_and_a_second_call_changes_nothing():
    async def main():
        loop_first()
        first = asyncio.get_running_loop()._default_executor
        loop_first()
        return first is asyncio.get_running_loop()._default_executor, await asyncio.to_thread(_where)

    for _ in range(2):  # two asyncio.run: two loops, each lowered
        same, (_, nice) = _in_a_thread(asyncio.run, main())
        assert same and nice == FILE_THREAD_NICE


@pytest.mark.skipif(not _may_raise_priority(), reason="this process may not raise a thread's priority")
def test_the_loops_own_thread_goes_first_once_from_where_it_was():
    mine = _nice()  # an earlier test's rollout may have raised this thread already

    async def main():
        loop_first()
        return _nice()

    def two_loops_from(start):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), start)
        return asyncio.run(main()), asyncio.run(main())  # a second loop in the same thread

    assert _in_a_thread(two_loops_from, 0) == (-LOOP_THREAD_RAISE, -LOOP_THREAD_RAISE)
    assert _in_a_thread(two_loops_from, 10) == (10 - LOOP_THREAD_RAISE,) * 2  # `nice -n 10 agentmill`: still below 0
    assert _nice() == mine  # the test's own thread was left alone


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_without_the_privilege_the_loop_thread_stays_and_the_file_threads_are_still_lowered():
    probe = ("import asyncio, os, threading\n"
             "from agentmill.loops import loop_first\n"
             "def nice(): return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())\n"
             "async def main():\n"
             "    loop_first()\n"
             "    return nice(), await asyncio.to_thread(nice)\n"
             "print(*asyncio.run(main()))\n")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(_nice()), str(FILE_THREAD_NICE)]
