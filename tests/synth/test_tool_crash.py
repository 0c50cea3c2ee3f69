"""A gym tool that crashes during the reference replay (raises, exits its process, dies of a signal), set
off by the candidate's own seed state, fails that candidate at positive verification (`reference_error`,
the candidate's fault, diagnosed bad_reference) — never an infrastructure pause, never a crash of the run."""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import ExitStack

import pytest

from agentmill.images import ImageBuilder
from agentmill.synth.candidate import Candidate, GymSet, write_task_folder
from agentmill.synth.config import SynthConfig, load_config
from agentmill.synth.gates import PositiveVerification
from agentmill.synth.gates.base import GateContext
from agentmill.synth.run import run_synth
from agentmill.synth.store import SynthStore
from agentmill.tasks.tool_task import load_tool_task
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply
from tests.synth.scripted import GYM, card_line, config_text, critic, judge

pytestmark = sandbox

CRASHING_TOOL = '''

def archive_ticket(db, ticket_id: int) -> dict:
    """Archive a ticket."""
    import os
    import signal

    title = db.execute("SELECT title FROM tickets WHERE id = ?", (ticket_id,)).fetchone()[0]
    if title == "exit":
        os._exit(3)
    if title == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if title == "raise":
        return {"ratio": 1 / 0}
    db.execute("UPDATE tickets SET status = 'closed', resolution = 'archived' WHERE id = ?", (ticket_id,))
    return {"id": ticket_id}
'''


def _gym(tmp_path):
    gym = tmp_path / "gym"
    shutil.copytree(GYM, gym, ignore=shutil.ignore_patterns("__pycache__"))
    (gym / "tools.py").write_text((gym / "tools.py").read_text() + CRASHING_TOOL)
    return gym


def _body(title: str) -> dict:
    return {
        "system": "You archive helpdesk tickets.",
        "prompt": f"[crash] Please archive ticket 20 ({title}).",
        "seed_sql": f"INSERT INTO tickets (id, title, status, priority) VALUES (20, '{title}', 'open', 2);",
        "calls": [{"tool": "archive_ticket", "arguments": {"ticket_id": 20}}],
        "verifiers": [
            {
                "name": "closed",
                "verifier_type": "database_state",
                "validation_config": {"query": "SELECT status FROM tickets WHERE id = 20", "expected_value": "closed"},
            }
        ],
        "entities": [{"table": "tickets", "column": "id", "value": 20}],
    }


@pytest.mark.parametrize(
    "title, evidence",
    [
        ("exit", "crashed without a result"),
        ("segv", "crashed without a result"),
        ("raise", "ZeroDivisionError"),
        ("fine", None),
    ],
)
def test_a_crashing_tool_fails_the_candidate_at_positive_verification(tmp_path, title, evidence):
    gym = _gym(tmp_path)
    config = SynthConfig.model_validate(
        {
            "env": {"gym_dir": gym},
            "synth": {"cards": "x"},
            "ballot": {"enabled": False},
            "roles": {r: {"base_url": "http://127.0.0.1:9/v1", "model": "m"} for r in ("generator", "critic", "judge")},
        }
    )
    cand = Candidate(candidate_id="cand", card_id="c", body=_body(title))
    folder = write_task_folder(cand, tmp_path / "tasks" / "cand", GymSet(gym_dir=gym))
    ctx = GateContext(
        candidate=cand,
        task=load_tool_task(folder),
        task_dir=folder,
        work_dir=tmp_path / "work",
        builder=ImageBuilder(),
        clients={},
        settings=config,
    )
    r = asyncio.run(PositiveVerification().run(ctx))
    if evidence is None:  # the same tool over a state that does not set it off: the control
        assert r.passed, r
        return
    assert (r.passed, r.code, r.fault, r.category, r.components) == (
        False,
        "reference_error",
        "candidate",
        "bad_reference",
        ["calls"],
    ), r
    assert "archive_ticket" in r.message and evidence in r.details["replay_errors"][0]["error"]


def test_a_crashing_tool_rejects_its_candidate_and_the_run_goes_on(tmp_path):
    gym = _gym(tmp_path)
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("crash") + "\n")
    with ExitStack() as stack:
        servers = {
            "generator": ChatServer(lambda r: Reply(json.dumps(_body("exit")))),
            "critic": ChatServer(critic),
            "judge": ChatServer(judge),
        }
        servers = {r: stack.enter_context(s) for r, s in servers.items()}
        text = config_text(servers, cards, max_slots=1, max_repairs=0, outage_pause_s=0.05)
        text = text.replace(f'gym_dir = "{GYM}"', f'gym_dir = "{gym}"').replace("[ballot]", "[ballot]\nenabled = false")
        (tmp_path / "synth.toml").write_text(text)
        events = []
        summary = asyncio.run(
            run_synth(
                load_config(tmp_path / "synth.toml"),
                tmp_path / "out",
                on_event=lambda kind, **info: events.append(kind),
            )
        )
    assert summary["accepted"] == 0 and "pause" not in events  # the candidate's fault: no outage pause
    store = SynthStore.open_existing(tmp_path / "out")
    assert [(r["state"], r["reason"][:30]) for r in store.rows("SELECT state, reason FROM candidates")] == [
        ("rejected", "positive: reference_error: ref")
    ]
    assert [(d["category"], d["by"]) for d in store.rows("SELECT category, by FROM diagnoses")] == [
        ("bad_reference", "critic")
    ]
