"""Many sandboxes started at once boot a few at a time (the rest queue, their start timeout counting
from their turn), and every one of them starts and runs."""

from __future__ import annotations

import asyncio

from agentmill.sandbox import bwrap
from agentmill.sandbox.bwrap import BwrapSandbox
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, run

pytestmark = sandbox


def test_sandboxes_started_together_boot_at_most_start_slots_at_a_time(monkeypatch):
    monkeypatch.setattr(bwrap, "START_SLOTS", 2)
    monkeypatch.setattr(bwrap, "_start_gate", bwrap.PerLoop(lambda: asyncio.Semaphore(bwrap.START_SLOTS)))
    booting, peak = [0], [0]
    real_wait = BwrapSandbox._wait_ready

    async def counted_wait(self):  # the boot itself, unchanged, with a count of who is in it
        booting[0] += 1
        peak[0] = max(peak[0], booting[0])
        try:
            await asyncio.sleep(0.05)  # hold the slot a moment, as a slow machine would
            await real_wait(self)
        finally:
            booting[0] -= 1

    monkeypatch.setattr(BwrapSandbox, "_wait_ready", counted_wait)

    async def one(i: int) -> str:
        async with BwrapSandbox(fresh_spec()) as sb:
            return (await sb.exec(f"echo {i}", timeout=30)).stdout.strip()

    async def many():
        return await asyncio.gather(*(one(i) for i in range(6)))

    assert run(many()) == [str(i) for i in range(6)]
    assert peak[0] == 2  # queued, not all six at once; and the gate did admit two together
