"""Deficit-weighted scheduling of capability cards onto generation slots.

A card's weight is max(0, target - accepted - in_flight) x its meta-review multiplier, so work flows
to the cards furthest below their targets and a card at its target (counting slots already running
for it) is never picked. Slot i's pick is drawn from Random(f"{seed}:{i}") over the current weights:
the same seed and the same sequence of completions give the same picks.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field


class CardQuota(BaseModel):
    model_config = ConfigDict(extra="forbid")
    card_id: str = Field(min_length=1)
    target_count: int = Field(ge=0)
    accepted: int = Field(0, ge=0)
    multiplier: float = Field(1.0, ge=0, description="meta-review scaling; 0 pauses the card")


class Slot(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: int
    card_id: str


class SlotResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slot: Slot
    accepted: bool
    error: str | None = None  # the worker raised: a failed slot, never a stopped run


class Scheduler:
    def __init__(self, quotas: list[CardQuota], seed: int | str = 0):
        ids = [q.card_id for q in quotas]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate card ids: {sorted({i for i in ids if ids.count(i) > 1})}")
        self.quotas = {q.card_id: q.model_copy() for q in sorted(quotas, key=lambda q: q.card_id)}
        self.in_flight = {i: 0 for i in self.quotas}
        self.seed = seed
        self.next_index = 0

    def weight(self, card_id: str) -> float:
        q = self.quotas[card_id]
        return max(0, q.target_count - q.accepted - self.in_flight[card_id]) * q.multiplier

    def set_multiplier(self, card_id: str, multiplier: float) -> None:
        if multiplier < 0:
            raise ValueError(f"multiplier for {card_id} must be >= 0, got {multiplier}")
        self.quotas[card_id].multiplier = multiplier

    def next_slot(self) -> Slot | None:
        """The next slot's card, or None when no card has positive weight now."""
        weights = [(cid, self.weight(cid)) for cid in self.quotas]
        total = sum(w for _, w in weights)
        if total <= 0:
            return None
        r = random.Random(f"{self.seed}:{self.next_index}").random() * total
        chosen = next(
            (cid for cid, w in weights if w > 0 and (r := r - w) < 0), [cid for cid, w in weights if w > 0][-1]
        )  # float round-off falls to the last live card
        slot = Slot(index=self.next_index, card_id=chosen)
        self.next_index += 1
        self.in_flight[chosen] += 1
        return slot

    def finish(self, slot: Slot, accepted: bool) -> None:
        if self.in_flight[slot.card_id] <= 0:
            raise ValueError(f"slot {slot.index} for {slot.card_id} finished twice or never started")
        self.in_flight[slot.card_id] -= 1
        if accepted:
            self.quotas[slot.card_id].accepted += 1


async def run_workers(
    scheduler: Scheduler,
    work: Callable[[Slot], Awaitable[bool]],
    workers: int,
    max_slots: int,
    stop: Callable[[], bool] | None = None,
) -> list[SlotResult]:
    """`workers` concurrent loops, each taking the next slot when its last one is done, until every
    card is at its target, `max_slots` slots have started or `stop()` says so (a spent budget: slots
    already running finish). `work` returns whether it accepted."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    results: list[SlotResult] = []
    changed = asyncio.Condition()
    started = 0

    async def loop() -> None:
        nonlocal started
        while True:
            async with changed:
                while True:
                    if started >= max_slots or (stop is not None and stop()):
                        return
                    slot = scheduler.next_slot()
                    if slot is not None:
                        started += 1
                        break
                    if not any(scheduler.in_flight.values()):
                        return  # nothing left to do and nothing that could free a slot
                    await changed.wait()  # a running slot may fail and give its deficit back
            try:
                result = SlotResult(slot=slot, accepted=bool(await work(slot)))
            except Exception as e:  # one failing slot never stops the run
                result = SlotResult(slot=slot, accepted=False, error=f"{type(e).__name__}: {e}")
            async with changed:
                scheduler.finish(slot, result.accepted)
                results.append(result)
                changed.notify_all()

    await asyncio.gather(*(loop() for _ in range(workers)))
    return results
