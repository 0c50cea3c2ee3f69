"""An endpoint outage pauses the box and resumes it; a lasting one ends the box `interrupted` (never a
verdict on the candidate, never a crash), and the next run takes the card up again."""

from __future__ import annotations

import asyncio
import threading
from contextlib import ExitStack

from agentmill.synth.config import load_config
from agentmill.synth.run import run_synth
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply
from tests.synth.scripted import Generator, card_line, config_text, role_servers

pytestmark = sandbox


class Flaky:
    """503 for the first `down` requests, then the real policy."""

    def __init__(self, policy, down: int):
        self.policy, self.down, self.lock = policy, down, threading.Lock()

    def __call__(self, request):
        with self.lock:
            self.down -= 1
            if self.down >= 0:
                return Reply(status=503, error="overloaded")
        return self.policy(request)


def _run(tmp_path, generator_policy, max_slots=1):
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = {r: s for r, s in role_servers().items() if r not in ("target", "solver")}
        servers["generator"] = ChatServer(generator_policy)
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        text = config_text(servers, cards, outage_pause_s=0.05, outage_retries=2, max_slots=max_slots)
        (tmp_path / "synth.toml").write_text(
            text.replace("[ballot]", "[ballot]\nenabled = false").replace("max_retries = 1", "max_retries = 0")
        )
        events = []
        summary = asyncio.run(
            run_synth(
                load_config(tmp_path / "synth.toml"),
                tmp_path / "out",
                on_event=lambda kind, **info: events.append((kind, info)),
            )
        )
    return summary, events, servers


def test_a_short_outage_pauses_and_the_box_goes_on(tmp_path):
    summary, events, servers = _run(tmp_path, Flaky(Generator(), down=2))
    assert summary["accepted"] == 1
    pauses = [info for kind, info in events if kind == "pause"]
    assert len(pauses) == 2 and pauses[1]["seconds"] == 2 * pauses[0]["seconds"]
    assert [r["state"] for r in SynthStore.open_existing(tmp_path / "out").rows("SELECT state FROM candidates")] == [
        "accepted"
    ]


def test_a_lasting_outage_interrupts_the_box_and_a_later_run_takes_it_up(tmp_path):
    summary, events, _ = _run(tmp_path, Flaky(Generator(), down=100))
    assert summary["accepted"] == 0
    store = SynthStore.open_existing(tmp_path / "out")
    rows = store.rows("SELECT state, reason FROM candidates")
    assert rows[0]["state"] == "interrupted" and "503" in rows[0]["reason"]
    assert store.rows("SELECT COUNT(*) AS n FROM diagnoses")[0]["n"] == 0  # not the candidate's fault
    store.close()
    # the endpoint is back: the next run on the same folder, with budget for one more slot, serves the card
    summary, _, _ = _run(tmp_path, Generator(), max_slots=2)
    assert summary["accepted"] == 1
    states = [
        r["state"]
        for r in SynthStore.open_existing(tmp_path / "out").rows("SELECT state FROM candidates ORDER BY slot")
    ]
    assert states == ["interrupted", "accepted"]


def test_a_dead_ballot_endpoint_is_an_outage_not_a_verdict_on_the_candidate(tmp_path):
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = role_servers()
        servers["target"] = ChatServer(lambda r: Reply(status=503, error="down"))
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        text = config_text(servers, cards, outage_pause_s=0.05, outage_retries=1, max_slots=1)
        (tmp_path / "synth.toml").write_text(text.replace("max_retries = 1", "max_retries = 0"))
        summary = asyncio.run(run_synth(load_config(tmp_path / "synth.toml"), tmp_path / "out"))
    store = SynthStore.open_existing(tmp_path / "out")
    assert summary["accepted"] == 0
    assert store.rows("SELECT state FROM candidates")[0]["state"] == "interrupted"
    ballot = store.rows("SELECT passed, code, fault FROM gate_results WHERE gate = 'ballot'")
    assert ballot == [{"passed": 0, "code": "ballot_infra", "fault": "infra"}]
    assert store.rows("SELECT COUNT(*) AS n FROM diagnoses")[0]["n"] == 0
    # the ballot's trials were real rollouts: two tries of one wave (2 target trials), each ended infra_error
    assert len(servers["target"].requests) == 4


class FlakyRepair(Flaky):
    """The generator endpoint answers 503 to the first `down` repair requests only."""

    def __call__(self, request):
        if "You repair" in request["messages"][0]["content"]:
            return super().__call__(request)
        return self.policy(request)


def _run_weak(tmp_path, generator, critic_policy):
    """One 'weak' card: negative verification fails, the critic says weak_verifier, a repair fixes it."""
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("weak") + "\n")
    with ExitStack() as stack:
        servers = {r: s for r, s in role_servers().items() if r not in ("target", "solver")}
        servers["generator"], servers["critic"] = ChatServer(generator), ChatServer(critic_policy)
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        text = config_text(servers, cards, outage_pause_s=0.05, outage_retries=2, max_slots=1, max_repairs=1)
        (tmp_path / "synth.toml").write_text(
            text.replace("[ballot]", "[ballot]\nenabled = false").replace("max_retries = 1", "max_retries = 0")
        )
        events = []
        summary = asyncio.run(
            run_synth(
                load_config(tmp_path / "synth.toml"),
                tmp_path / "out",
                on_event=lambda kind, **info: events.append((kind, info)),
            )
        )
    return summary, [info["what"].split(":")[0] for kind, info in events if kind == "pause"], servers


def test_critic_and_repair_outages_pause_and_the_box_goes_on(tmp_path):
    from tests.synth.scripted import critic

    summary, pauses, servers = _run_weak(tmp_path, FlakyRepair(Generator(), down=2), Flaky(critic, down=1))
    assert summary["accepted"] == 1
    assert pauses == ["critic", "repair", "repair"]
    store = SynthStore.open_existing(tmp_path / "out")
    # the critic's own diagnosis once it was back (not the gate's stand-in), and one repair that worked
    assert [(d["category"], d["by"]) for d in store.rows("SELECT category, by FROM diagnoses")] == [
        ("weak_verifier", "critic")
    ]
    assert [r["ok"] for r in store.rows("SELECT ok FROM repairs")] == [1]


def test_a_lasting_repair_outage_interrupts_the_box_without_blaming_the_candidate(tmp_path):
    from tests.synth.scripted import critic

    summary, pauses, _ = _run_weak(tmp_path, FlakyRepair(Generator(), down=100), critic)
    assert summary["accepted"] == 0 and pauses == ["repair", "repair"]
    store = SynthStore.open_existing(tmp_path / "out")
    cand = store.rows("SELECT state, reason FROM candidates")[0]
    assert cand["state"] == "interrupted" and cand["reason"].startswith("infra: repair") and "503" in cand["reason"]
    # the gates did not run again on the unrepaired candidate: one attempt, and its failure is the weak verifier
    assert [(g["gate"], g["code"]) for g in store.rows("SELECT gate, code FROM gate_results WHERE passed = 0")] == [
        ("negative", "mutant_survived")
    ]
    assert store.rows("SELECT COUNT(*) AS n FROM attempts")[0]["n"] == 1


TOO_LONG = Reply(status=400, error="Requested tokens (9100) exceed context window of 8192")


def _run_roles(tmp_path, **policies):
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = {r: s for r, s in role_servers().items() if r not in ("target", "solver")}
        servers.update({r: ChatServer(p) for r, p in policies.items()})
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        text = config_text(servers, cards, outage_pause_s=0.05, outage_retries=2, max_slots=1)
        (tmp_path / "synth.toml").write_text(text.replace("[ballot]", "[ballot]\nenabled = false"))
        events = []
        summary = asyncio.run(
            run_synth(
                load_config(tmp_path / "synth.toml"),
                tmp_path / "out",
                on_event=lambda kind, **info: events.append(kind),
            )
        )
    store = SynthStore.open_existing(tmp_path / "out")
    return summary, events, servers, store


def test_a_generator_prompt_the_model_cannot_hold_is_a_typed_outcome_not_an_outage(tmp_path):
    summary, events, servers, store = _run_roles(tmp_path, generator=lambda r: TOO_LONG)
    assert summary["accepted"] == 0 and "pause" not in events and len(servers["generator"].requests) == 1
    cand = store.rows("SELECT state, reason FROM candidates")[0]
    assert cand["state"] == "interrupted" and cand["reason"].startswith("config: generator context exceeded")
    assert store.rows("SELECT gate, passed, code, fault FROM gate_results") == [
        {"gate": "generate", "passed": 0, "code": "context_exceeded", "fault": "infra"}
    ]
    assert store.rows("SELECT COUNT(*) AS n FROM diagnoses")[0]["n"] == 0  # never the candidate's fault
    from agentmill.synth.report import funnel

    assert funnel(store)[0] == {"gate": "generate", "entered": 1, "passed": 0, "failed": {"context_exceeded": 1}}


def test_a_candidate_the_judge_cannot_read_is_not_retried_as_an_outage(tmp_path):
    summary, events, servers, store = _run_roles(tmp_path, judge=lambda r: TOO_LONG)
    assert summary["accepted"] == 0 and "pause" not in events and len(servers["judge"].requests) == 1
    assert store.rows("SELECT gate, code, fault FROM gate_results WHERE passed = 0") == [
        {"gate": "semantic", "code": "context_exceeded", "fault": "infra"}
    ]
    assert store.rows("SELECT state FROM candidates")[0]["state"] == "interrupted"
