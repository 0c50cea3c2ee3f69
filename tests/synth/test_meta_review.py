"""Meta-review: coverage against targets re-weights the scheduler, failing cards are flagged and paused,
systematic critic findings become guidance, recorded, and the generator is shown it."""

import asyncio
import json

from agentmill.synth.box import BoxEnv, _generate
from agentmill.synth.candidate import Candidate
from agentmill.synth.card import CapabilityCard
from agentmill.synth.config import SynthConfig
from agentmill.synth.critic import Diagnosis
from agentmill.synth.meta_review import meta_review
from agentmill.synth.scheduler import CardQuota, Scheduler
from agentmill.synth.store import SynthStore
from tests.helpers.chat_server import ChatServer, Reply
from tests.synth.scripted import FINAL, GYM, card_line


def _card(cid: str) -> CapabilityCard:
    return CapabilityCard.model_validate_json(card_line("good").replace("card-good", cid))


def _box(store: SynthStore, cid: str, card: str, accepted: bool, category: str | None = None) -> None:
    store.start_candidate(cid, card, "target", None, store.next_slot())
    attempt = store.add_attempt(cid, 0, "generate", None, "", None)
    if category:
        store.add_diagnosis(attempt, Diagnosis(category=category, components=["verifiers"]))
    if accepted:
        store.accept(Candidate(candidate_id=cid, card_id=card, body=FINAL["good"]), attempt)
    else:
        store.reject(cid, "x")


def test_meta_review_reweights_flags_and_records_guidance(tmp_path):
    store = SynthStore(tmp_path)
    for cid in ("ahead", "behind", "stuck"):
        store.add_card(_card(cid), 4)
    for i in range(3):
        _box(store, f"ahead-{i}", "ahead", True)
    _box(store, "behind-0", "behind", True)
    for i in range(3):
        _box(store, f"stuck-{i}", "stuck", False, "weak_verifier")
    scheduler = Scheduler([CardQuota(card_id=c, target_count=4) for c in ("ahead", "behind", "stuck")])
    review = meta_review(store, scheduler, flag_after=3)
    m = review["multipliers"]
    assert m["behind"] > 1 > m["ahead"] and m["stuck"] == 0
    assert scheduler.quotas["stuck"].multiplier == 0 and scheduler.quotas["behind"].multiplier == m["behind"]
    assert review["flagged"] == {"stuck": "3 boxes, no acceptance"} and review["over_represented"] == ["ahead"]
    assert review["systematic"] == ["weak_verifier"] and "verifiers" in review["guidance"]
    assert store.latest_guidance() == review["guidance"]
    assert store.rows("SELECT flagged FROM cards WHERE card_id = 'stuck'")[0]["flagged"]

    # the next generator request carries the guidance (and a prompt file overridden by the config's folder)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "generator.md").write_text("HOUSE GENERATOR PROMPT")
    with ChatServer(lambda r: Reply(json.dumps(FINAL["good"]))) as server:
        role = {"base_url": server.base_url, "model": "g", "max_retries": 0}
        config = SynthConfig.model_validate(
            {
                "env": {"gym_dir": GYM},
                "synth": {"cards": "c", "prompts": tmp_path / "prompts"},
                "ballot": {"enabled": False},
                "roles": {r: role for r in ("generator", "critic", "judge")},
            }
        )
        clients = {r: c.client() for r, c in config.roles.items()}
        env = BoxEnv(config=config, store=store, clients=clients, gates=[], builder=None, environment="(gym)")
        body, _, error = asyncio.run(_generate(env, _card("behind").generator_view(), None))
        assert body is not None and error is None
        sent = server.requests[0]["messages"][1]["content"]
        assert server.requests[0]["messages"][0]["content"] == "HOUSE GENERATOR PROMPT"
    assert "Guidance from the last meta-review" in sent and review["guidance"] in sent


def test_meta_review_reports_repetition_and_uncovered_dimensions(tmp_path):
    from agentmill.synth.gates.base import GateResult
    from tests.synth.scripted import _body

    store = SynthStore(tmp_path)
    card = json.loads(card_line("good").replace("card-good", "wide"))
    card["tools"] += ["set_priority"]  # a tool of the card that no accepted sample calls
    store.add_card(CapabilityCard.model_validate(card), 4)
    # two accepted samples that differ only in their request: state, entities, calls and verifiers are fixed
    same_state = [
        {**FINAL["good"], "prompt": p} for p in (FINAL["good"]["prompt"], "Close ticket 10, the AP was swapped.")
    ]
    for i, body in enumerate(same_state):
        store.start_candidate(f"wide-{i}", "wide", "target", None, store.next_slot())
        store.accept(
            Candidate(candidate_id=f"wide-{i}", card_id="wide", body=body),
            store.add_attempt(f"wide-{i}", 0, "generate", None, "", None),
        )
    store.start_candidate("wide-2", "wide", "target", None, store.next_slot())
    attempt = store.add_attempt("wide-2", 0, "generate", None, "", None)
    store.add_gate(attempt, GateResult(gate="novelty", passed=False, code="duplicate", message="repeats wide-0"))
    store.reject("wide-2", "novelty: duplicate")
    review = meta_review(store, Scheduler([CardQuota(card_id="wide", target_count=4)], seed=0), flag_after=5)
    assert review["repeats"] == {"wide": 1}
    assert review["unused_tools"] == {"wide": ["set_priority"]}
    assert review["fixed_axes"] == {"wide": ["state", "entities", "reference", "verifiers"]}
    assert review["most_alike"]["wide"]["pair"] == ["wide-0", "wide-1"]
    for text in ("1 candidate repeated accepted samples", "set_priority", "share the same state, entities"):
        assert text in review["guidance"], text
    # honest twin: varied samples that call every tool of their card leave nothing to report
    other = _body("good", 27, "Printer jams on tray 2", "roller")
    store2 = SynthStore(tmp_path / "2")
    store2.add_card(_card("plain"), 4)
    for i, body in enumerate((FINAL["good"], other)):
        store2.start_candidate(f"p-{i}", "plain", "target", None, store2.next_slot())
        store2.accept(
            Candidate(candidate_id=f"p-{i}", card_id="plain", body=body),
            store2.add_attempt(f"p-{i}", 0, "generate", None, "", None),
        )
    clean = meta_review(store2, Scheduler([CardQuota(card_id="plain", target_count=4)], seed=0), flag_after=5)
    assert (clean["repeats"], clean["unused_tools"], clean["fixed_axes"]) == ({}, {}, {})
