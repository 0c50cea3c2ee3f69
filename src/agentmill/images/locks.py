"""One asyncio lock per key and per event loop (see agentmill/runtime/loops.py).

Across loops, threads and processes the file locks (flock) beside each image or layer serialise
the actual build; these locks only keep one loop from racing itself.
"""

from __future__ import annotations

import asyncio

from agentmill.runtime.loops import PerLoop


class KeyedLocks:
    def __init__(self) -> None:
        self._locks: PerLoop[dict[str, asyncio.Lock]] = PerLoop(dict)

    def __call__(self, key: str) -> asyncio.Lock:
        return self._locks.get().setdefault(key, asyncio.Lock())
