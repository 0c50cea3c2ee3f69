"""`agentmill import eog` on a small file in EnterpriseOps-Gym's published row format (lists stored as JSON
strings, as the Hugging Face dataset has them) whose rows name the bundled hr and procurement gyms: the
rows become task folders that load against the bundled gyms, and export gives the same rows back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.errors import TaskError
from agentmill.tasks import load_task

AGENTMILL = Path(sys.executable).with_name("agentmill")
FIXTURE = Path(__file__).parent / "fixtures" / "eog_hr_procurement.jsonl"
GYMS = Path(__file__).resolve().parents[2] / "src" / "agentmill" / "tools" / "gyms"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(AGENTMILL), *args], capture_output=True, text=True, timeout=120)


def test_published_rows_import_onto_the_bundled_gyms_and_export_back(tmp_path):
    run = _cli("import", "eog", str(FIXTURE), "--out", str(tmp_path / "tasks"))
    assert run.returncode == 0, run.stderr
    assert "wrote 2 tasks" in run.stderr
    hr, proc = (
        load_task(tmp_path / "tasks" / "hr-approve-leave-0001"),
        load_task(tmp_path / "tasks" / "proc-hold-vendor-0002"),
    )
    assert hr.kind == proc.kind == "tools"
    # gym names resolve to the bundled folders: an imported row runs here with nothing copied in
    assert [(g.name, g.bundled, g.path) for g in hr.tool_spec.gyms] == [("hr", True, GYMS / "hr")]
    assert [(g.name, g.bundled) for g in proc.tool_spec.gyms] == [("procurement", True), ("hr", True)]
    assert hr.tool_spec.selected_tools == ("search_leave_requests", "get_leave_request", "approve_leave_request")
    assert hr.tool_spec.restricted_tools == ("adjust_leave_balance",)
    assert [v.verifier_type for v in hr.tool_spec.verifiers] == ["database_state", "tool_execution"]
    assert [v.verifier_type for v in proc.tool_spec.verifiers] == ["database_state", "response_check"]
    # every tool a row selects or restricts is one the named gym defines
    tools = (GYMS / "hr" / "tools.py").read_text()
    for name in hr.tool_spec.selected_tools + hr.tool_spec.restricted_tools:
        assert f"\ndef {name}(db" in tools, name

    out = tmp_path / "rows.jsonl"
    assert _cli("env", "export-eog", str(tmp_path / "tasks"), "--out", str(out)).returncode == 0
    back = {r["task_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    for row in map(json.loads, FIXTURE.read_text().splitlines()):
        assert back[row["task_id"]] == row  # same keys, same JSON-string encoding, extra keys kept


def test_a_row_naming_an_unknown_gym_imports_but_does_not_load(tmp_path):
    row = json.loads(FIXTURE.read_text().splitlines()[0])
    row["gym_servers_config"] = row["gym_servers_config"].replace('"hr"', '"payroll"')
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(row) + "\n")
    assert _cli("import", "eog", str(src), "--out", str(tmp_path / "tasks")).returncode == 0
    with pytest.raises(TaskError, match="payroll"):  # the loader names the missing gym
        load_task(tmp_path / "tasks" / "hr-approve-leave-0001")
