"""One object per running event loop (a loop's threads' priorities: loop_priority.py).

asyncio locks and semaphores belong to the loop they first waited in. Code shared by several
`asyncio.run` calls, or by trainer threads each with its own loop, keeps one per loop; a loop
that is gone takes its objects with it.
"""

from __future__ import annotations

import asyncio
import weakref
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
