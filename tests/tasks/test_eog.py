"""EnterpriseOps-Gym config rows <-> tool-task folders, round trip both ways, bad rows reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentmill.tasks import load_task
from agentmill.tasks.eog import export_eog, import_eog
from tests.tools.helpers import CLOSE_VPN_VERIFIERS, make_tool_task

AGENTMILL = Path(sys.executable).with_name("agentmill")

ROWS = [
    {  # lists as Python lists, a multi-gym config with context, extra keys kept as they are
        "task_id": "hybrid-0042",
        "system_prompt": "You are an IT and collaboration assistant. Follow change policy.",
        "user_prompt": "Close the VPN ticket and email the requester.",
        "verifiers": CLOSE_VPN_VERIFIERS
        + [
            {
                "name": "told_user",
                "verifier_type": "response_check",
                "gym_name": "mail",
                "validation_config": {
                    "sql_query": "SELECT subject FROM messages",
                    "comparison_prompt": "Was the user told?",
                    "minimum_comparison_value": 8,
                },
            }
        ],
        "gym_servers_config": [
            {
                "mcp_server_name": "helpdesk",
                "mcp_server_url": "http://itsm:8000",
                "mcp_endpoint": "/mcp",
                "seed_database_file": "itsm_seed.db",
                "context": {"user_id": "u-17"},
            },
            {
                "mcp_server_name": "mail",
                "mcp_server_url": "http://mail:8001",
                "mcp_endpoint": "/mcp",
                "seed_database_file": "",
            },
        ],
        "selected_tools": ["close_ticket", "send_mail"],
        "restricted_tools": ["delete_ticket"],
        "number_of_runs": 3,
        "domain": "hybrid",
    },
    {  # the Hugging Face dataset's encoding: lists as JSON strings; a null and an absent key
        "system_prompt": "You are a helpdesk agent.",
        "user_prompt": "How many tickets are open?",
        "verifiers": json.dumps(
            [
                {
                    "name": "tool_used",
                    "verifier_type": "tool_execution",
                    "validation_config": {"selected_tools": ["list_tickets"], "minimum_tool_calls": 1},
                }
            ]
        ),
        "gym_servers_config": json.dumps(
            [
                {
                    "mcp_server_name": "helpdesk",
                    "mcp_server_url": "http://itsm:8000",
                    "mcp_endpoint": "/mcp",
                    "seed_database_file": "",
                }
            ]
        ),
        "selected_tools": None,
    },
]


def _write(path: Path, rows: list, extra_lines: list[str] = ()) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "".join(line + "\n" for line in extra_lines))
    return path


def test_rows_round_trip_exactly(tmp_path):
    src = _write(tmp_path / "in.jsonl", ROWS)
    report = import_eog(src, tmp_path / "tasks")
    assert report.errors == [] and [p.name for p in report.written][0] == "hybrid-0042"
    folder = report.written[0]
    assert (folder / "instruction.md").read_text() == ROWS[0]["user_prompt"]
    assert (folder / "system.md").read_text() == ROWS[0]["system_prompt"]
    n, errors = export_eog(tmp_path / "tasks", tmp_path / "out.jsonl")
    assert (n, errors) == (2, [])
    back = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    by_prompt = {r["user_prompt"]: r for r in back}
    for row in ROWS:
        assert by_prompt[row["user_prompt"]] == row


def test_an_imported_task_runs_here_once_its_gyms_exist(tmp_path):
    row = {
        **ROWS[1],
        "gym_servers_config": [
            {
                "mcp_server_name": "helpdesk",
                "mcp_server_url": "http://x",
                "mcp_endpoint": "/mcp",
                "seed_database_file": "",
            }
        ],
    }
    report = import_eog(_write(tmp_path / "in.jsonl", [row]), tmp_path / "tasks")
    folder = report.written[0]
    import shutil

    shutil.copytree(
        Path(__file__).parents[1] / "tools" / "fixtures" / "helpdesk", folder / "environment" / "gyms" / "helpdesk"
    )
    task = load_task(folder)
    assert task.kind == "tools" and [g.name for g in task.tool_spec.gyms] == ["helpdesk"]
    assert task.tool_spec.verifiers[0].verifier_type == "tool_execution"


def test_a_native_task_exports_and_imports_back(tmp_path):
    make_tool_task(tmp_path / "ds" / "close-vpn", toml_extra='restricted_tools = ["set_priority"]')
    n, _ = export_eog(tmp_path / "ds", tmp_path / "rows.jsonl")
    (row,) = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert row["task_id"] == "close-vpn" and row["verifiers"] == CLOSE_VPN_VERIFIERS
    assert row["selected_tools"] == ["close_ticket", "list_tickets"]  # the tools the reference solution uses
    assert row["restricted_tools"] == ["set_priority"]
    assert row["gym_servers_config"][0]["mcp_server_name"] == "gym"
    report = import_eog(tmp_path / "rows.jsonl", tmp_path / "back")
    again = json.loads(
        json.dumps(__import__("agentmill.tasks.eog", fromlist=["task_to_row"]).task_to_row(report.written[0]))
    )
    assert again == row


def test_bad_rows_are_reported_with_their_line_and_skipped(tmp_path):
    bad_verifier = {
        **ROWS[1],
        "verifiers": [
            {
                "name": "v",
                "verifier_type": "database_state",
                "validation_config": {"query": "SELECT 1", "comparison_type": "roughly"},
            }
        ],
    }
    src = _write(tmp_path / "in.jsonl", [ROWS[0], bad_verifier, {"user_prompt": "x"}], ["{not json"])
    run = subprocess.run(
        [str(AGENTMILL), "import", "eog", str(src), "--out", str(tmp_path / "tasks")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert "in.jsonl:2: verifiers: entry 0 ('v'): field 'validation_config.comparison_type'" in run.stderr
    assert "in.jsonl:3: 'system_prompt' must be a non-empty string" in run.stderr
    assert "in.jsonl:4: not JSON" in run.stderr
    assert "wrote 1 tasks" in run.stderr
    export = subprocess.run(
        [str(AGENTMILL), "env", "export-eog", str(tmp_path / "tasks"), "--out", str(tmp_path / "o.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert export.returncode == 0 and len((tmp_path / "o.jsonl").read_text().splitlines()) == 1


def test_export_into_a_folder_that_does_not_exist_yet(tmp_path):
    make_tool_task(tmp_path / "ds" / "close-vpn")
    out = tmp_path / "new" / "deeper" / "rows.jsonl"
    n, errors = export_eog(tmp_path / "ds", out)
    assert (n, errors) == (1, [])
    assert json.loads(out.read_text())["task_id"] == "close-vpn"
    assert [p.name for p in out.parent.iterdir()] == ["rows.jsonl"]  # no temporary file left behind
