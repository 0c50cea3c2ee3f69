"""One asyncio lock per key and per event loop.

An asyncio.Lock belongs to the loop it first waited in; a builder shared by several `asyncio.run`
calls (or by trainer threads, each with its own loop) must not hand one loop's lock to another.
Across loops, threads and processes the file locks (flock) beside each image or layer serialise
the actual build; these locks only keep one loop from racing itself.
"""

from __future__ import annotations

import asyncio
import weakref


class KeyedLocks:
    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = \
            weakref.WeakKeyDictionary()

    def __call__(self, key: str) -> asyncio.Lock:
        locks = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        return locks.setdefault(key, asyncio.Lock())
