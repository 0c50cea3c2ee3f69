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
# lowered, 24-49 ms with both; docs/benchmarks.md). A child inherits its thread's value, so
# spawn() (child_processes.py) starts every child back at the base, where the thread was before the
# raise: a sandbox's processes never outrank the host's, even where no cgroup holds them. The one
# exception is a worker of the processes executor: its loop carries the turns, so it keeps the
# driver's raise and raises its own loop from there (paired, 256 x 5 on 2 workers: the workers'
# loop lag p99 28-47 ms so, 51-67 ms from the base), and it is told the base (BASE_NICE_ENV) so
# that its own children go back to it.
LOOP_THREAD_RAISE = 5
BASE_NICE_ENV = "AGENTMILL_BASE_NICE"
FILE_THREAD_NICE = 10
_arranged: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_this_thread = threading.local()  # .base: raised once (a second loop does not raise it again)


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


def base_nice() -> int | None:
    """The nice value children of the calling thread start at: where the thread (or, in a worker,
    the driver's) was before loop_first raised it. None where it was not raised."""
    return getattr(_this_thread, "base", None)


def _raise_this_thread() -> None:
    if base_nice() is not None:
        return
    tid = threading.get_native_id()
    with contextlib.suppress(OSError, AttributeError):  # without CAP_SYS_NICE it stays as it is
        was = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, was - LOOP_THREAD_RAISE)
        _this_thread.base = _inherited_base(was)


def _inherited_base(was: int) -> int:
    """A worker started with the driver's raise is told where the driver began; else where we were."""
    told = os.environ.get(BASE_NICE_ENV, "")
    return int(told) if told.lstrip("-").isdigit() and int(told) >= was else was


def _lower_this_thread() -> None:
    with contextlib.suppress(OSError, AttributeError):  # lowering one's own priority is always allowed on Linux
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FILE_THREAD_NICE)
