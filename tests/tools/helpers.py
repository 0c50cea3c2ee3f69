"""Tool-task folders for tests, over the tiny gyms in tests/tools/fixtures/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

CLOSE_VPN_VERIFIERS = [
    {
        "name": "vpn_closed",
        "verifier_type": "database_state",
        "validation_config": {
            "query": "SELECT status FROM tickets WHERE id = 1",
            "expected_value": "closed",
            "comparison_type": "equals",
        },
    },
    {
        "name": "resolution_mentions_cert",
        "verifier_type": "database_state",
        "validation_config": {
            "query": "SELECT resolution FROM tickets WHERE id = 1",
            "expected_value": "certificate",
            "comparison_type": "contains",
        },
    },
    {
        "name": "others_untouched",
        "verifier_type": "database_state",
        "validation_config": {
            "query": "SELECT COUNT(*) FROM tickets WHERE status = 'closed' AND id != 1",
            "expected_value": 0,
            "comparison_type": "equals",
        },
    },
]
CLOSE_VPN_CALLS = [
    {"tool": "list_tickets", "arguments": {"status": "open"}},
    {"tool": "close_ticket", "arguments": {"ticket_id": 1, "resolution": "Renewed the expired VPN certificate."}},
]


def make_tool_task(
    dest: Path,
    *,
    gym: str = "helpdesk",
    verifiers=None,
    calls=None,
    answer: str | None = None,
    seed_sql: str | None = None,
    instruction: str = "Close the VPN ticket: the VPN certificate was renewed.",
    system: str = "You are a helpdesk agent. Closed tickets are final.",
    toml_extra: str = "",
    raw_verifiers: str | None = None,
    raw_calls: str | None = None,
) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "instruction.md").write_text(instruction + "\n")
    (dest / "system.md").write_text(system + "\n")
    (dest / "task.toml").write_text(
        f'version = "1.0"\n\n[agent]\ntimeout_sec = 120\n\n[environment]\nkind = "tools"\n{toml_extra}\n'
    )
    shutil.copytree(FIXTURES / gym, dest / "environment" / "gym")
    if seed_sql is not None:
        (dest / "environment" / "seed.sql").write_text(seed_sql)
    (dest / "tests").mkdir(exist_ok=True)
    (dest / "tests" / "verifiers.json").write_text(
        raw_verifiers
        if raw_verifiers is not None
        else json.dumps(CLOSE_VPN_VERIFIERS if verifiers is None else verifiers, indent=1)
    )
    (dest / "solution").mkdir(exist_ok=True)
    body = CLOSE_VPN_CALLS if calls is None else calls
    if raw_calls is not None:
        (dest / "solution" / "calls.json").write_text(raw_calls)
    else:
        (dest / "solution" / "calls.json").write_text(
            json.dumps({"calls": body, "answer": answer} if answer is not None else body, indent=1)
        )
    return dest
