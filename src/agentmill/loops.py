"""One object per running event loop, and the priorities of a loop's threads.

asyncio locks and semaphores belong to the loop they first waited in. Code shared by several
`asyncio.run` calls, or by trainer threads each with its own loop, keeps one per loop; a loop
that is gone takes its objects with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    def __init__(self, make: Callable[[], T]):
        self._make = make
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        value = self._by_loop.get(loop)
        if value is None:
            value = self._by_loop[loop] = self._make()
        return value


# A loop that runs trials is the one thread every trial waits on; with hundreds in flight on a
# few cores it competes with its own file threads and with the sandboxes it feeds. So the loop's
# thread runs LOOP_THREAD_RAISE nice steps above where it was, where the process may raise a
# priority (root, as agentmill runs its sandboxes), and the threads that do its file work
# (asyncio.to_thread: copies, removals, writes) at FILE_THREAD_NICE (benchmarks/inflight.py, 256 in
# flight on 2 cores, paired: loop lag p99 49-75 ms with neither, 30-66 ms with the file threads
# lowered, 24-49 ms with both; docs/benchmarks.md). Children started from the loop's thread inherit
# its value: a worker of the processes executor raises its own loop from there (the thread carrying
# the turns ranks first), and sandboxes sit in cpu cgroups of their own, where a nice value only
# ranks their own processes. Nothing started from the raised thread keeps the raise: spawn()
# (child_processes.py) puts each child back where the thread began, so a sandbox's processes never
# outrank the host's where no cgroup holds them, and a worker raises its own loop from the base.
LOOP_THREAD_RAISE = 5
FILE_THREAD_NICE = 10
_arranged: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_this_thread = threading.local()  # .raised: a second loop in a thread does not raise it again


def loop_first() -> None:
    """Put the running loop's thread ahead of its helpers, once per loop: the thread itself
    LOOP_THREAD_RAISE steps higher, once, if the process may raise it (it stays so: agentmill's
    processes, the CLI, workers and Ray node actors, exist to run trials), and a default executor
    whose threads run at FILE_THREAD_NICE. asyncio's own executor (made on a first to_thread) is
    replaced, one someone chose is kept."""
    loop = asyncio.get_running_loop()
    if loop in _arranged:
        return
    _arranged.add(loop)
    _raise_this_thread()
    current = getattr(loop, "_default_executor", None)
    if current is not None and not getattr(current, "_thread_name_prefix", "").startswith("asyncio"):
        return
    loop.set_default_executor(ThreadPoolExecutor(min(32, (os.cpu_count() or 1) + 4), thread_name_prefix="agentmill-files",
                                                 initializer=_lower_this_thread))
    if current is not None:
        current.shutdown(wait=False)  # what it runs now still finishes


def raised_here() -> int:
    """How many nice steps loop_first raised the calling thread (0: not raised)."""
    return getattr(_this_thread, "raised", 0)


def _raise_this_thread() -> None:
    if raised_here():
        return
    tid = threading.get_native_id()
    with contextlib.suppress(OSError, AttributeError):  # without CAP_SYS_NICE it stays as it is
        was = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, was - LOOP_THREAD_RAISE)
        _this_thread.raised = was - os.getpriority(os.PRIO_PROCESS, tid)  # less at the -20 floor


def _lower_this_thread() -> None:
    with contextlib.suppress(OSError, AttributeError):  # lowering one's own priority is always allowed on Linux
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FILE_THREAD_NICE)
