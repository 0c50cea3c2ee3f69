"""Cards from diagnosis: real rollouts of a scripted target and teacher, classification, a card writer
on a real local HTTP server, and the information barrier refusing the card that leaks its prompt."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack

from agentmill.synth.cards import cards_from_diagnosis, read_cards
from agentmill.synth.config import SynthConfig
from agentmill.synth.report import funnel
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply
from tests.tools.helpers import CLOSE_VPN_CALLS, make_tool_task

PRINTER = (
    "Raise the printer ticket on the third floor to the highest priority, because it blocks the payroll run today."
)
PRINTER_CALLS = [
    {"tool": "list_tickets", "arguments": {"status": "open"}},
    {"tool": "set_priority", "arguments": {"ticket_id": 2, "priority": 1}},
]
PRINTER_VERIFIERS = [
    {
        "name": "top_priority",
        "verifier_type": "database_state",
        "validation_config": {"query": "SELECT priority FROM tickets WHERE id = 2", "expected_value": 1},
    }
]
SOLUTIONS = {"VPN": CLOSE_VPN_CALLS, "printer": PRINTER_CALLS}


def _prompt(request) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def teacher(request) -> Reply:
    calls = next(c for k, c in SOLUTIONS.items() if k in _prompt(request))
    done = sum(m["role"] == "tool" for m in request["messages"])
    if done >= len(calls):
        return Reply("Done.")
    return Reply(
        None, tool_calls=[{"id": f"c{done}", "name": calls[done]["tool"], "arguments": calls[done]["arguments"]}]
    )


def card_writer(request) -> Reply:
    user = request["messages"][1]["content"]
    card = {
        "capability": "close a ticket with a resolution after checking it",
        "tools": ["list_tickets", "close_ticket"],
        "workflow": ["find the ticket", "close it with a note"],
        "target_failure": "it never called a tool",
        "teacher_success": "it listed the open tickets first",
        "end_state_properties": ["only that ticket closed"],
        "variable_dimensions": ["which ticket"],
    }
    if "printer" in user:  # a careless writer: quotes the original request in the card
        card["target_failure"] = f"asked to '{PRINTER}', the target did nothing"
    return Reply(json.dumps(card))


@sandbox
def test_cards_from_diagnosis_and_the_barrier(tmp_path):
    make_tool_task(tmp_path / "eval" / "eval-vpn")
    make_tool_task(
        tmp_path / "eval" / "eval-printer", instruction=PRINTER, calls=PRINTER_CALLS, verifiers=PRINTER_VERIFIERS
    )
    with ExitStack() as stack:
        target = stack.enter_context(ChatServer(lambda r: Reply("I cannot do that.")))
        teach = stack.enter_context(ChatServer(teacher))
        writer = stack.enter_context(ChatServer(card_writer))
        role = lambda server, name: {"base_url": server.base_url, "model": name, "max_retries": 1}  # noqa: E731
        config = SynthConfig.model_validate(
            {
                "env": {"gyms": ["itsm"]},
                "synth": {},
                "ballot": {"enabled": False},
                "diagnosis": {
                    "tasks": tmp_path / "eval",
                    "target_run": tmp_path / "target",
                    "teacher_run": tmp_path / "teacher",
                    "attempts": 1,
                },
                "roles": {
                    **{r: role(writer, "writer") for r in ("generator", "critic", "judge", "card_writer")},
                    "target": role(target, "target"),
                    "teacher": role(teach, "teacher"),
                },
            }
        )
        store = SynthStore(tmp_path / "out")
        clients = {r: c.client() for r, c in config.roles.items()}
        # the diagnosis runs both rollouts itself (real run folders, resumable), then writes the cards
        cards, problems = asyncio.run(cards_from_diagnosis(config, clients, store))
        assert (
            len(target.requests) == 2 and len(teach.requests) == 3 + 3
        )  # one attempt per task: 2 calls + the answer each
        again, _ = asyncio.run(
            cards_from_diagnosis(
                config, {r: c.client() for r, c in config.roles.items()}, SynthStore(tmp_path / "again")
            )
        )
        assert len(target.requests) == 2 and [c.card_id for c in again] == [
            c.card_id for c in cards
        ]  # resumed: no new trials

    assert [c.source_task for c in cards] == ["eval-vpn"]
    assert len(problems) == 1 and "eval-printer" in problems[0] and "information barrier" in problems[0]
    refused = store.rows("SELECT source_task, leaks FROM barrier")
    assert refused[0]["source_task"] == "eval-printer"
    assert json.loads(refused[0]["leaks"])[0]["kind"] == "prompt_ngram"
    # the writer read both trajectories: the target's giving up and the teacher's tool calls
    sent = " ".join(r["messages"][1]["content"] for r in writer.requests[:2])
    assert "I cannot do that." in sent and "set_priority" in sent and "close_ticket" in sent
    diagnosis = json.loads(store.get_meta("diagnosis"))
    assert {t["task"]: t["label"] for t in diagnosis["tasks"]} == {"eval-printer": "teach", "eval-vpn": "teach"}
    # the funnel shows the refusal
    for card in cards:
        store.add_card(card, 1)
    assert funnel(store)[0] == {"gate": "barrier", "entered": 2, "passed": 1, "failed": {"prompt_ngram": 1}}


def test_cards_file_reports_bad_lines_and_keeps_the_rest(tmp_path):
    from tests.synth.scripted import card_line

    path = tmp_path / "cards.jsonl"
    escape = card_line("weak").replace("card-weak", "../../etc/evil")  # card ids name folders: never a path
    path.write_text(
        card_line("good")
        + "\n"
        + '{"card_id": "x"}\n'
        + card_line("good")
        + "\n"
        + escape
        + "\n"
        + card_line("weak")
        + "\n"
    )
    cards, problems = read_cards(path)
    assert [c.card_id for c in cards] == ["card-good", "card-weak"]
    assert (
        problems[0].startswith(f"{path}:2: field 'source_task'")
        and problems[1] == f"{path}:3: duplicate card_id 'card-good'"
    )
    assert problems[2].startswith(f"{path}:4: field 'card_id': String should match pattern")
