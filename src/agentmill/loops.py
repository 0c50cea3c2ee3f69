"""One object per running event loop, and each loop's file-work threads.

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


# The threads that do file work for an event loop (asyncio.to_thread: copies, removals, writes)
# run at this nice value. With hundreds of trials that work comes in bursts, and at equal
# priority it delays the loop's own thread, whose lateness every trial feels
# (benchmarks/inflight.py, 256 in flight: loop lag p99 50-71 ms, then 24-30 ms).
FILE_THREAD_NICE = 10
_lowered: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


def lower_file_threads() -> None:
    """Give the running loop a default executor whose threads run at FILE_THREAD_NICE. asyncio's
    own (made on a first to_thread) is replaced, one someone chose is kept."""
    loop = asyncio.get_running_loop()
    if loop in _lowered:
        return
    _lowered.add(loop)
    current = getattr(loop, "_default_executor", None)
    if current is not None and not getattr(current, "_thread_name_prefix", "").startswith("asyncio"):
        return
    loop.set_default_executor(ThreadPoolExecutor(min(32, (os.cpu_count() or 1) + 4), thread_name_prefix="agentmill-files",
                                                 initializer=_lower_this_thread))
    if current is not None:
        current.shutdown(wait=False)  # what it runs now still finishes


def _lower_this_thread() -> None:
    with contextlib.suppress(OSError, AttributeError):  # raising one's own nice is always allowed on Linux
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FILE_THREAD_NICE)
