"""Meta-review cadence: with meta_review_every = 2 and 5 finished target boxes, reviews happen exactly at 2
and 4 — with boxes finishing concurrently, across resumes, and when a kill fell between a box's finish
and its review — and the recorded guidance reaches the next boxes' generator requests, checked at the
scripted generator endpoint (what it actually received)."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack

from agentmill.synth.candidate import Candidate
from agentmill.synth.config import load_config
from agentmill.synth.meta_review import review_due
from agentmill.synth.run import run_synth
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer
from tests.synth.scripted import FINAL, Generator, card_line, config_text, critic, judge

GUIDANCE = "Guidance from the last meta-review:"


def test_a_review_is_due_at_each_multiple_of_finished_target_boxes(tmp_path):
    store = SynthStore(tmp_path)
    from agentmill.synth.card import CapabilityCard

    store.add_card(CapabilityCard.model_validate_json(card_line("good")), 9)
    marks = []
    for i in range(5):
        store.start_candidate(f"t{i}", "card-good", "target", None, i)
        attempt = store.add_attempt(f"t{i}", 0, "generate", None, "", None)
        store.accept(Candidate(candidate_id=f"t{i}", card_id="card-good", body=FINAL["good"]), attempt)
        mark = review_due(store, 2)
        if mark is not None:
            store.add_meta_review(mark, {"guidance": f"after {mark}"})
            marks.append(mark)
        # variants (kind multiply) and boxes an outage interrupted are not target boxes that finished
        store.start_candidate(f"t{i}-m0", "card-good", "multiply", f"t{i}", None)
        store.reject(f"t{i}-m0", "x")
        store.start_candidate(f"x{i}", "card-good", "target", None, 100 + i)
        store.interrupt(f"x{i}", "infra: down")
        assert review_due(store, 2) is None
    assert marks == [2, 4] and store.get_meta("reviewed_at_boxes") == "4"
    assert [r["after_boxes"] for r in store.rows("SELECT after_boxes FROM meta_reviews ORDER BY n")] == [2, 4]


def _run(tmp_path, max_slots: int, workers: int) -> ChatServer:
    """A run over one card whose candidates always fail negative verification (a weak verifier, no repairs),
    so every box finishes rejected and every review finds weak_verifier systematic (it has guidance)."""
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("weak") + "\n")
    with ExitStack() as stack:
        servers = {"generator": ChatServer(Generator()), "critic": ChatServer(critic), "judge": ChatServer(judge)}
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        text = config_text(
            servers,
            cards,
            workers=workers,
            max_slots=max_slots,
            max_repairs=0,
            target_per_card=10,
            meta_review_every=2,
            flag_after_failures=100,
        )
        (tmp_path / "synth.toml").write_text(text.replace("[ballot]", "[ballot]\nenabled = false"))
        summary = asyncio.run(run_synth(load_config(tmp_path / "synth.toml"), tmp_path / "out"))
    assert summary["accepted"] == 0
    return servers["generator"]


def _reviews(tmp_path) -> list[dict]:
    store = SynthStore.open_existing(tmp_path / "out")
    try:
        return [{**r, "review": json.loads(r["review"])} for r in store.rows("SELECT * FROM meta_reviews ORDER BY n")]
    finally:
        store.close()


def _sent(generator: ChatServer) -> list[str]:
    return [r["messages"][1]["content"] for r in generator.requests]


@sandbox
def test_reviews_at_2_and_4_with_boxes_finishing_concurrently_and_guidance_reaches_the_generator(tmp_path):
    generator = _run(tmp_path, max_slots=5, workers=3)
    reviews = _reviews(tmp_path)
    assert [r["after_boxes"] for r in reviews] == [2, 4]
    assert all(r["review"]["systematic"] == ["weak_verifier"] and r["review"]["guidance"] for r in reviews)
    store = SynthStore.open_existing(tmp_path / "out")
    started = sorted(r["started"] for r in store.rows("SELECT started FROM candidates"))
    store.close()
    # what the generator endpoint received: one request per box (no repairs); a box that started after a
    # review carried that review's guidance, a box that started before the first review carried none
    sent = _sent(generator)
    assert len(sent) == len(started) == 5
    after_first = sum(t > reviews[0]["at"] for t in started)
    with_guidance = [s for s in sent if GUIDANCE in s]
    assert len(with_guidance) == after_first and 1 <= after_first <= 3
    assert all(reviews[0]["review"]["guidance"] in s for s in with_guidance)


@sandbox
def test_reviews_at_2_and_4_across_resumes_and_a_review_a_kill_left_owed(tmp_path):
    _run(tmp_path, max_slots=3, workers=1)
    assert [r["after_boxes"] for r in _reviews(tmp_path)] == [2]
    _run(tmp_path, max_slots=4, workers=1)  # resumes: box 4 finishes, the review at 4 follows
    assert [r["after_boxes"] for r in _reviews(tmp_path)] == [2, 4]
    # as if a kill had landed between box 4's finish and its review: the review at 4 is owed
    store = SynthStore.open_existing(tmp_path / "out")
    store.db.execute("DELETE FROM meta_reviews WHERE after_boxes = 4")
    store.set_meta("reviewed_at_boxes", "2")
    store.close()
    generator = _run(tmp_path, max_slots=5, workers=1)
    reviews = _reviews(tmp_path)
    assert [r["after_boxes"] for r in reviews] == [2, 4]  # never at 5
    store = SynthStore.open_existing(tmp_path / "out")
    box5 = store.rows("SELECT started FROM candidates WHERE slot = 4")[0]["started"]
    store.close()
    assert reviews[1]["at"] < box5  # made on start, before box 5 began
    # box 5, the only new box, was generated with the owed review's guidance
    sent = _sent(generator)
    assert len(sent) == 1 and GUIDANCE in sent[0] and reviews[1]["review"]["guidance"] in sent[0]
