"""Verifier completeness: a declared alternative solution (another valid call sequence) is replayed by the
oracle like the reference; a verifier that rejects it is too strict and the candidate is rejected, while
verifiers that check the end state and not the path let both through."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack

from agentmill.images import ImageBuilder
from agentmill.synth.candidate import Candidate, GymSet, write_task_folder
from agentmill.synth.config import SynthConfig, load_config
from agentmill.synth.gates import VerifierCompleteness
from agentmill.synth.gates.base import GateContext
from agentmill.synth.run import run_synth
from agentmill.synth.store import SynthStore
from agentmill.tasks.tool_task import load_tool_task
from tests.conftest import sandbox
from tests.helpers.chat_server import Reply
from tests.synth.scripted import GOOD, GYM, card_line, config_text, role_servers

pytestmark = sandbox

# another valid way to do it: the ticket found through the open-ticket list, the note in other words
ALTERNATIVE = [
    {"tool": "list_tickets", "arguments": {"status": "open"}},
    {"tool": "close_ticket", "arguments": {"ticket_id": 10, "resolution": "Swapped the faulty access point."}},
]
STRICT = {
    **GOOD,
    "alternatives": [ALTERNATIVE],
    "verifiers": GOOD["verifiers"][:1]
    + [
        {
            "name": "exact_note",
            "verifier_type": "database_state",
            "validation_config": {
                "query": "SELECT resolution FROM tickets WHERE id = 10",
                "expected_value": "Replaced the access point.",
            },
        }
    ]
    + GOOD["verifiers"][2:],
}
FAIR = {**GOOD, "alternatives": [ALTERNATIVE]}  # its note verifier: `contains` "access point"
BROKEN = {**GOOD, "alternatives": [[{"tool": "close_ticket", "arguments": {"ticket_id": 10, "resolution": " "}}]]}


def _ctx(tmp_path, body: dict) -> GateContext:
    config = SynthConfig.model_validate(
        {
            "env": {"gym_dir": GYM},
            "synth": {"cards": "x.jsonl"},
            "ballot": {"enabled": False},
            "roles": {r: {"base_url": "http://127.0.0.1:9/v1", "model": "m"} for r in ("generator", "critic", "judge")},
        }
    )
    cand = Candidate(candidate_id="cand", card_id="c", body=body)
    folder = write_task_folder(cand, tmp_path / "cand", GymSet(gym_dir=GYM))
    return GateContext(
        candidate=cand,
        task=load_tool_task(folder),
        task_dir=folder,
        work_dir=tmp_path,
        builder=ImageBuilder(),
        clients={},
        settings=config,
    )


def test_a_too_strict_verifier_fails_on_the_declared_alternative_and_a_fair_one_does_not(tmp_path):
    async def go():
        return [
            await VerifierCompleteness().run(_ctx(tmp_path / name, body))
            for name, body in (("strict", STRICT), ("fair", FAIR), ("broken", BROKEN), ("none", GOOD))
        ]

    strict, fair, broken, none = asyncio.run(go())
    assert (strict.passed, strict.code, strict.category) == (False, "verifiers_reject_alternative", "weak_verifier")
    assert "exact_note" in strict.message and "list_tickets -> close_ticket" in strict.message
    assert fair.passed and fair.details["alternatives"] == 1
    # an alternative that itself errors is the alternative's fault, not the verifiers'
    assert (broken.passed, broken.code, broken.components) == (False, "alternative_error", ["alternatives"])
    assert none.passed and none.details["alternatives"] == 0


class Strict:
    """A generator that keeps writing the too-strict candidate, repairs included."""

    def __call__(self, request: dict) -> Reply:
        if "You repair" in request["messages"][0]["content"]:
            keys = [
                k.strip()
                for k in request["messages"][1]["content"].rsplit("each a corrected replacement:", 1)[1].split(",")
            ]
            return Reply(json.dumps({k: STRICT[k] for k in keys}))
        return Reply(json.dumps(STRICT))


def test_a_candidate_whose_verifier_rejects_a_valid_alternative_is_rejected(tmp_path):
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers(generator=Strict()).items()}
        (tmp_path / "synth.toml").write_text(config_text(servers, cards, max_slots=1))
        summary = asyncio.run(run_synth(load_config(tmp_path / "synth.toml"), tmp_path / "out"))
        target_requests = len(servers["target"].requests)
    assert summary["accepted"] == 0
    store = SynthStore.open_existing(tmp_path / "out")
    assert [r["state"] for r in store.rows("SELECT state FROM candidates")] == ["rejected"]
    failed = [(r["gate"], r["code"]) for r in store.rows("SELECT gate, code FROM gate_results WHERE passed = 0")]
    assert failed == [("completeness", "verifiers_reject_alternative")] * 2
    assert target_requests == 0  # rejected before the ballot


class Fair(Strict):
    def __call__(self, request: dict) -> Reply:
        if "You repair" in request["messages"][0]["content"]:
            raise AssertionError("the fair candidate needs no repair")
        return Reply(json.dumps(FAIR))


def _alternative_solver(request: dict) -> Reply:
    """A solver that takes the declared alternative path, not the reference's."""
    done = sum(1 for m in request["messages"] if m["role"] == "tool")
    if done >= len(ALTERNATIVE):
        return Reply("Closed it.")
    call = ALTERNATIVE[done]
    return Reply(None, tool_calls=[{"id": f"c{done}", "name": call["tool"], "arguments": call["arguments"]}])


def test_the_honest_twin_is_accepted_and_the_solvers_other_path_is_recorded(tmp_path):
    from tests.helpers.chat_server import ChatServer

    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    with ExitStack() as stack:
        servers = role_servers(generator=Fair())
        servers["solver"] = ChatServer(_alternative_solver)
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        (tmp_path / "synth.toml").write_text(config_text(servers, cards, max_slots=1))
        summary = asyncio.run(run_synth(load_config(tmp_path / "synth.toml"), tmp_path / "out"))
    assert summary["accepted"] == 1
    store = SynthStore.open_existing(tmp_path / "out")
    ballot = json.loads(store.rows("SELECT details FROM gate_results WHERE gate = 'ballot'")[0]["details"])
    assert ballot["solver_passing_paths"] == 2 and ballot["solver_alternative_paths"] == [
        "list_tickets -> close_ticket"
    ]
