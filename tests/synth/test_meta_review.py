"""Meta-review: coverage against targets re-weights the scheduler, failing cards are flagged and paused,
systematic critic findings become guidance, recorded, and the generator is shown it."""

import asyncio
import json

from agentmill.synth.box import BoxEnv, _generate
from agentmill.synth.card import CapabilityCard
from agentmill.synth.candidate import Candidate
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
        config = SynthConfig.model_validate({"env": {"gym_dir": GYM}, "synth": {"cards": "c", "prompts": tmp_path / "prompts"},
                                             "ballot": {"enabled": False}, "roles": {r: role for r in ("generator", "critic", "judge")}})
        clients = {r: c.client() for r, c in config.roles.items()}
        env = BoxEnv(config=config, store=store, clients=clients, gates=[], builder=None, environment="(gym)")
        body, _, error = asyncio.run(_generate(env, _card("behind").generator_view(), None))
        assert body is not None and error is None
        sent = server.requests[0]["messages"][1]["content"]
        assert server.requests[0]["messages"][0]["content"] == "HOUSE GENERATOR PROMPT"
    assert "Guidance from the last meta-review" in sent and review["guidance"] in sent
