import asyncio
from collections import Counter

import pytest

from agentmill.synth.scheduler import CardQuota, Scheduler, run_workers


def picks(s: Scheduler, n: int, accept: bool = False) -> list[str]:
    out = []
    for _ in range(n):
        slot = s.next_slot()
        if slot is None:
            break
        out.append(slot.card_id)
        s.finish(slot, accept)
    return out


def test_deficits_drive_the_picks():
    s = Scheduler(
        [
            CardQuota(card_id="big", target_count=90),
            CardQuota(card_id="small", target_count=10),
            CardQuota(card_id="half_done", target_count=90, accepted=80),
        ],
        seed=1,
    )
    c = Counter(picks(s, 2000))
    # weights 90 : 10 : 10 -> shares 0.818 : 0.091 : 0.091
    assert 1550 < c["big"] < 1720
    assert 120 < c["small"] < 250 and 120 < c["half_done"] < 250


def test_card_at_target_is_never_picked():
    s = Scheduler(
        [
            CardQuota(card_id="done", target_count=5, accepted=5),
            CardQuota(card_id="over", target_count=3, accepted=7),
            CardQuota(card_id="open", target_count=1),
        ],
        seed=3,
    )
    assert set(picks(s, 300)) == {"open"}


def test_in_flight_slots_count_against_the_deficit_and_acceptance_closes_it():
    s = Scheduler([CardQuota(card_id="a", target_count=2)], seed=0)
    first, second = s.next_slot(), s.next_slot()
    assert s.next_slot() is None  # two already running for a target of two
    s.finish(first, accepted=False)  # a failure gives its share back
    third = s.next_slot()
    assert third is not None
    s.finish(second, True)
    s.finish(third, True)
    assert s.next_slot() is None and s.quotas["a"].accepted == 2
    with pytest.raises(ValueError, match="finished twice"):
        s.finish(third, True)


def test_multiplier_scales_and_zero_pauses():
    s = Scheduler([CardQuota(card_id="a", target_count=10), CardQuota(card_id="b", target_count=10)], seed=5)
    s.set_multiplier("a", 0)
    assert set(picks(s, 100)) == {"b"}
    s.set_multiplier("a", 9)
    c = Counter(picks(s, 1000))
    assert c["a"] > 5 * c["b"]


def test_deterministic_for_a_seed():
    quotas = [CardQuota(card_id=f"c{i}", target_count=i + 1) for i in range(6)]
    assert picks(Scheduler(quotas, seed=42), 200) == picks(Scheduler(quotas, seed=42), 200)
    assert picks(Scheduler(quotas, seed=42), 200) != picks(Scheduler(quotas, seed=43), 200)
    # input order does not matter
    assert picks(Scheduler(quotas[::-1], seed=42), 200) == picks(Scheduler(quotas, seed=42), 200)


def test_duplicate_card_ids_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        Scheduler([CardQuota(card_id="a", target_count=1), CardQuota(card_id="a", target_count=2)])


def test_workers_run_bounded_in_parallel_and_stop_at_targets():
    s = Scheduler([CardQuota(card_id="a", target_count=4), CardQuota(card_id="b", target_count=3)], seed=7)
    running = peak = 0

    async def work(slot):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        if slot.index % 3 == 0:
            raise RuntimeError("generator reply did not parse")
        return slot.index % 3 == 1

    results = asyncio.run(run_workers(s, work, workers=3, max_slots=100))
    assert peak == 3
    assert {q.card_id: q.accepted for q in s.quotas.values()} == {"a": 4, "b": 3}  # never past a target
    assert sum(r.accepted for r in results) == 7
    assert any(r.error and "did not parse" in r.error for r in results)
    assert sorted(r.slot.index for r in results) == list(range(len(results)))


def test_workers_stop_at_the_slot_budget():
    s = Scheduler([CardQuota(card_id="a", target_count=50)], seed=0)

    async def never(slot):
        await asyncio.sleep(0)
        return False

    results = asyncio.run(run_workers(s, never, workers=4, max_slots=9))
    assert len(results) == 9 and s.quotas["a"].accepted == 0
