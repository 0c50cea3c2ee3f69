"""The event loop's file-work threads run at a lower priority than the loop's own thread
(loops.lower_file_threads), asyncio's lazily made executor included; an executor someone chose
is kept as it is."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentmill.loops import FILE_THREAD_NICE, lower_file_threads


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _where() -> tuple[str, int]:
    return threading.current_thread().name, _nice()


@pytest.fixture(autouse=True)
def _not_already_lowered():
    if os.getpriority(os.PRIO_PROCESS, 0) >= FILE_THREAD_NICE:
        pytest.skip("this process already runs at the file threads' nice value or lower priority")


def test_file_work_runs_below_the_loop_thread_even_after_asyncio_made_its_own_executor():
    async def main():
        await asyncio.to_thread(_where)  # asyncio makes its default executor here
        lower_file_threads()
        return _nice(), await asyncio.to_thread(_where), await asyncio.gather(*(asyncio.to_thread(_where) for _ in range(8)))

    loop_nice, (name, nice), many = asyncio.run(main())
    assert loop_nice == os.getpriority(os.PRIO_PROCESS, 0), "the loop's own thread was lowered"
    assert nice == FILE_THREAD_NICE and name.startswith("agentmill-files")
    assert {n for _, n in many} == {FILE_THREAD_NICE}


def test_an_executor_someone_chose_is_kept():
    async def main():
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1, thread_name_prefix="theirs"))
        lower_file_threads()
        return await asyncio.to_thread(_where)

    name, nice = asyncio.run(main())
    assert name.startswith("theirs") and nice == os.getpriority(os.PRIO_PROCESS, 0)


def test_each_loop_gets_its_own_and_a_second_call_changes_nothing():
    async def main():
        lower_file_threads()
        first = asyncio.get_running_loop()._default_executor
        lower_file_threads()
        return first is asyncio.get_running_loop()._default_executor, await asyncio.to_thread(_where)

    for _ in range(2):  # two asyncio.run: two loops, each lowered
        same, (_, nice) = asyncio.run(main())
        assert same and nice == FILE_THREAD_NICE
