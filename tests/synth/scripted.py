"""Scripted models for synthesis tests: every role a real local HTTP chat server (tests/helpers/chat_server.py)
with deterministic replies, and candidates with planted defects over the tiny helpdesk gym.

Each planted case is keyed by a marker in the card's capability ("case:NAME") and in the task's prompt
("[NAME]"), so every role can tell which case a request is about from what crossed the wire.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers.chat_server import ChatServer, Reply
from tests.tools.helpers import FIXTURES

GYM = FIXTURES / "helpdesk"
SYSTEM = "You are a helpdesk agent for Ardent Mills. Closed tickets are final. Look tickets up before changing them."


def _seed(tid: int, title: str) -> str:
    return f"INSERT INTO tickets (id, title, status, priority, assignee_id) VALUES ({tid}, '{title}', 'open', 2, 1);"


def _strong(tid: int, word: str) -> list[dict]:
    return [
        {
            "name": "closed",
            "verifier_type": "database_state",
            "validation_config": {"query": f"SELECT status FROM tickets WHERE id = {tid}", "expected_value": "closed"},
        },
        {
            "name": "resolution",
            "verifier_type": "database_state",
            "validation_config": {
                "query": f"SELECT resolution FROM tickets WHERE id = {tid}",
                "expected_value": word,
                "comparison_type": "contains",
            },
        },
        {
            "name": "others_open",
            "verifier_type": "database_state",
            "validation_config": {
                "query": f"SELECT COUNT(*) FROM tickets WHERE status = 'closed' AND id != {tid}",
                "expected_value": 0,
            },
        },
    ]


def _calls(tid: int, resolution: str) -> list[dict]:
    return [
        {"tool": "get_ticket", "arguments": {"ticket_id": tid}},
        {"tool": "close_ticket", "arguments": {"ticket_id": tid, "resolution": resolution}},
    ]


def _body(
    case: str, tid: int, title: str, word: str, *, seed: bool = True, verifiers=None, calls=None, entities=None
) -> dict:
    return {
        "system": SYSTEM,
        "prompt": f"[{case}] Ticket {tid} ({title}) is fixed: we replaced the {word}. Please close it with a note.",
        "seed_sql": _seed(tid, title) if seed else "",
        "calls": calls if calls is not None else _calls(tid, f"Replaced the {word}."),
        "answer": f"Closed ticket {tid}.",
        "verifiers": verifiers if verifiers is not None else _strong(tid, word),
        "entities": entities if entities is not None else [{"table": "tickets", "column": "id", "value": tid}],
    }


# case -> (first candidate, repaired components by name)
GOOD = _body("good", 10, "Wi-Fi drops in room 4", "access point")
CASES: dict[str, dict] = {
    "good": {"first": GOOD},
    "weak": {
        "first": _body(
            "weak",
            11,
            "Scanner offline",
            "scanner cable",
            verifiers=[
                {
                    "name": "one_closed",
                    "verifier_type": "database_state",
                    "validation_config": {
                        "query": "SELECT COUNT(*) FROM tickets WHERE status = 'closed'",
                        "expected_value": 1,
                    },
                }
            ],
        ),
        "fix": {"verifiers": _strong(11, "scanner cable")},
    },
    "vacuous": {
        "first": _body(
            "vacuous",
            12,
            "Monitor flickers",
            "monitor",
            verifiers=[
                {
                    "name": "users_exist",
                    "verifier_type": "database_state",
                    "validation_config": {"query": "SELECT COUNT(*) FROM users", "expected_value": 3},
                }
            ],
        ),
        "fix": {"verifiers": _strong(12, "monitor")},
    },
    "badref": {
        "first": _body("badref", 13, "Headset crackles", "headset", calls=_calls(13, "  ")),
        "fix": {"calls": _calls(13, "Replaced the headset.")},
    },
    "ghost": {
        "first": _body("ghost", 14, "Dock not charging", "dock", seed=False),
        "fix": {
            "seed_sql": _seed(14, "Dock not charging"),
            "entities": [{"table": "tickets", "column": "id", "value": 14}],
        },
    },
    "easy": {"first": _body("easy", 15, "Mouse wheel stuck", "mouse"), "fix": {}},
    "garbage": {"first": _body("garbage", 16, "Keyboard keys sticky", "keyboard"), "garbage_first": True},
}
# the repaired (or first, if never broken) body per case: what a solver should do
FINAL = {case: {**c["first"], **c.get("fix", {})} for case, c in CASES.items()}


def card_line(case: str) -> str:
    return json.dumps(
        {
            "card_id": f"card-{case}",
            "source_task": f"eval-{case}",
            "capability": f"case:{case} close a resolved helpdesk ticket with a resolution note after looking it up",
            "tools": ["get_ticket", "close_ticket"],
            "workflow": ["look the ticket up", "close it with a note"],
            "target_failure": "closed the wrong record",
            "teacher_success": "looked the record up first",
            "end_state_properties": ["only the named ticket is closed", "the note names the fix"],
            "variable_dimensions": ["ticket", "fault", "wording"],
        }
    )


def _user(request: dict) -> str:
    return "\n".join(m.get("content") or "" for m in request["messages"] if m["role"] == "user")


def _case(text: str, pattern: str) -> str | None:
    m = re.search(pattern, text)
    return m.group(1) if m else None


class Generator:
    """generate / multiply / repair, by the system prompt; garbage once for the 'garbage' case."""

    def __init__(self):
        self.garbled: set[str] = set()
        self.multiplied = 0

    def __call__(self, request: dict) -> Reply:
        system, user = request["messages"][0]["content"], _user(request)
        if "You repair" in system:
            case = _case(user, r"\[(\w+)\]")
            keys = [k.strip() for k in user.rsplit("each a corrected replacement:", 1)[1].split(",")]
            fix = CASES[case].get("fix", {})
            return Reply(json.dumps({k: fix.get(k, FINAL[case][k]) for k in keys}))
        case = _case(user, r"case:(\w+)")
        if "variant" in system:
            self.multiplied += 1
            n = 40 + self.multiplied
            return Reply(json.dumps(_body(f"var{n}", n, f"Variant fault {n}", "fuse")))
        c = CASES[case]
        if c.get("garbage_first") and case not in self.garbled:
            self.garbled.add(case)
            return Reply("Sure! Here is a great task: close the ticket, verify it, done. {not json")
        return Reply(json.dumps(c["first"]))


CRITIC_BY_CODE = {
    "mutant_survived": ("weak_verifier", ["verifiers"]),
    "vacuous": ("weak_verifier", ["verifiers"]),
    "reference_error": ("bad_reference", ["calls"]),
    "too_easy": ("capability_mismatch", ["prompt"]),
}


def critic(request: dict) -> Reply:
    user = _user(request)
    code = _case(user, r"code: (\w+)")
    if code not in CRITIC_BY_CODE:  # e.g. missing_entity: a rambling critic; the gate's own hint is used
        return Reply("I think the state is probably off somewhere, hard to say.")
    cat, comps = CRITIC_BY_CODE[code]
    return Reply(json.dumps({"category": cat, "components": comps, "explanation": f"{code} says so"}))


def judge(request: dict) -> Reply:
    return Reply(json.dumps({"realistic": True, "arbitrary_constraints": [], "score": 8, "reason": "a plain request"}))


def tool_player(solves) -> callable:
    """A tools-agent model: replays the case's final calls when `solves(case)`, else gives up at once."""

    def policy(request: dict) -> Reply:
        user = _user(request)
        case = _case(user, r"\[(\w+)\]")
        done = sum(1 for m in request["messages"] if m["role"] == "tool")
        if case is None or not solves(case):
            return Reply("I could not find a way to do this.")
        if case.startswith("var"):
            n = int(case[3:])
            calls = _calls(n, "Replaced the fuse.")
        else:
            calls = FINAL[case]["calls"]
        if done >= len(calls):
            return Reply("Done: the ticket is closed.")
        call = calls[done]
        return Reply(None, tool_calls=[{"id": f"c{done}", "name": call["tool"], "arguments": call["arguments"]}])

    return policy


def config_text(servers: dict[str, ChatServer], cards: Path, **synth) -> str:
    settings = {
        "workers": 2,
        "max_slots": 12,
        "target_per_card": 1,
        "max_repairs": 1,
        "meta_review_every": 1,
        "flag_after_failures": 1,
        "cards": str(cards),
        **synth,
    }
    lines = ["[synth]"] + [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    lines += ["", "[env]", f'gym_dir = "{GYM}"', "", "[ballot]", "k = 3", "concurrency = 6"]
    for role, server in servers.items():
        lines += [
            "",
            f"[roles.{role}]",
            f'base_url = "{server.base_url}"',
            f'model = "scripted-{role}"',
            "max_retries = 1",
            "temperature = 0.0",
        ]
    return "\n".join(lines) + "\n"


def role_servers(
    target_solves=lambda case: case == "easy", generator: Generator | None = None
) -> dict[str, ChatServer]:
    return {
        "generator": ChatServer(generator or Generator()),
        "critic": ChatServer(critic),
        "judge": ChatServer(judge),
        "target": ChatServer(tool_player(target_solves)),
        "solver": ChatServer(tool_player(lambda case: True)),
    }
