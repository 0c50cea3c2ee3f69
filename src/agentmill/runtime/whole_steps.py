"""File work that a cancel cannot cut in half.

`asyncio.to_thread` hands a call to a thread and lets the caller be cancelled while the thread
goes on. For a step whose parts must land together (a trial's folder and its ledger row), that
leaves the first part done and the second never started. `whole_step` runs the step in the
loop's threads so that a cancel either comes before the step began (then it never runs) or
waits for it to end.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class _Claim:
    """Who got to the step first: the thread (it runs) or the cancel (it never will)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ended = threading.Event()
        self.started = self.abandoned = False


async def whole_step(fn: Callable[..., T], *args) -> T:
    """fn(*args) in the running loop's threads, whole or not at all. Cancelled after the thread
    took it up, the caller waits for it to end before the cancel goes on."""
    claim = _Claim()

    def step() -> T | None:
        with claim.lock:
            if claim.abandoned:
                return None
            claim.started = True
        try:
            return fn(*args)
        finally:
            claim.ended.set()

    try:
        return await asyncio.to_thread(step)  # type: ignore[return-value,arg-type]
    except asyncio.CancelledError:
        with claim.lock:
            claim.abandoned = True
            began = claim.started
        if began:
            # Blocking on purpose: an await here could itself be cancelled (a second Ctrl-C,
            # asyncio.run cancelling what is left) and cut the step after all. It lasts one step.
            claim.ended.wait()
        raise
