"""Loading tool-task folders: the kind registry, gyms, verifiers.json and calls.json, and bad input."""

from __future__ import annotations

import json

import pytest

from agentmill.errors import TaskError
from agentmill.tasks import load_dataset, load_task
from agentmill.tasks.kinds import TaskKind, kind_names, register_kind, unregister_kind
from agentmill.tasks.tool_spec import DatabaseStateVerifier
from tests.tools.helpers import CLOSE_VPN_CALLS, CLOSE_VPN_VERIFIERS, make_tool_task


def test_a_tool_task_loads_into_the_task_record(tmp_path):
    task = load_task(
        make_tool_task(tmp_path / "close-vpn", answer="Closed ticket 1.", seed_sql="UPDATE tickets SET priority = 1;")
    )
    assert task.kind == "tools" and task.config.environment.kind == "tools"
    assert task.system.startswith("You are a helpdesk agent")
    spec = task.tool_spec
    assert [g.name for g in spec.gyms] == ["gym"] and (spec.gyms[0].path / "tools.py").is_file()
    assert spec.seeds == (task.path / "environment" / "seed.sql",)
    assert [v.name for v in spec.verifiers] == [v["name"] for v in CLOSE_VPN_VERIFIERS]
    assert isinstance(spec.verifiers[0], DatabaseStateVerifier)
    assert [c.tool for c in spec.calls] == [c["tool"] for c in CLOSE_VPN_CALLS] and spec.answer == "Closed ticket 1."
    assert task.solution_script == "calls.json"


def test_terminal_tasks_still_load_as_terminal(tmp_path):
    from agentmill.tasks import write_task

    task = load_task(write_task(tmp_path / "t", instruction="x", test_sh="#!/bin/bash\n"))
    assert task.kind == "terminal" and task.tool_spec is None


def test_the_content_hash_changes_with_the_gym(tmp_path):
    a = load_task(make_tool_task(tmp_path / "a"))
    tools = a.path / "environment" / "gym" / "tools.py"
    tools.write_text(tools.read_text() + "\n# changed\n")
    assert load_task(a.path).content_hash != a.content_hash


def test_adding_a_kind_is_one_registration(tmp_path):
    from agentmill.tasks.io import load_harbor

    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "ODD").write_text("")
    (folder / "instruction.md").write_text("hi\n")
    (folder / "task.toml").write_text('version = "1.0"\n')
    (folder / "tests").mkdir()
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\n")
    register_kind(
        TaskKind(
            "odd",
            lambda root: (root / "ODD").exists(),
            lambda root: load_harbor(root).model_copy(update={"kind": "odd"}),
        )
    )
    try:
        assert "odd" in kind_names()
        assert load_task(folder).kind == "odd"
    finally:
        unregister_kind("odd")
    assert load_task(folder).kind == "terminal"


@pytest.mark.parametrize(
    "verifiers, message",
    [
        ("[{", r"verifiers.json: invalid JSON at line 1"),
        ('{"x": 1}', r"verifiers.json: must be a JSON list of verifiers"),
        (
            json.dumps(
                [
                    CLOSE_VPN_VERIFIERS[0],
                    {
                        "name": "bad",
                        "verifier_type": "database_state",
                        "validation_config": {"query": "SELECT 1", "comparison_type": "about"},
                    },
                ]
            ),
            r"verifiers.json: entry 1 \('bad'\): field 'validation_config.comparison_type'",
        ),
        (
            json.dumps([{"name": "x", "verifier_type": "vibes", "validation_config": {}}]),
            r"verifiers.json: entry 0 \('x'\): .*verifier_type",
        ),
        (
            json.dumps([{"name": "x", "verifier_type": "database_state", "validation_config": {"query": ""}}]),
            r"entry 0 \('x'\): field 'validation_config.query'",
        ),
        (json.dumps([{"verifier_type": "tool_execution", "validation_config": {}}]), r"entry 0: field 'name'"),
    ],
)
def test_a_malformed_verifiers_json_names_the_file_and_entry(tmp_path, verifiers, message):
    with pytest.raises(TaskError, match=message):
        load_task(make_tool_task(tmp_path / "t", raw_verifiers=verifiers))


@pytest.mark.parametrize(
    "calls, message",
    [
        ("nope", r"calls.json: invalid JSON"),
        (
            '[{"tool": "close_ticket", "arguments": {"ticket_id": 1}}, {"arguments": {}}]',
            r"calls.json: entry 1: field 'tool'",
        ),
        ('[{"tool": "close_ticket", "arguments": [1]}]', r"calls.json: entry 0 \('close_ticket'\): field 'arguments'"),
        ('{"calls": [], "answer": 3}', r"calls.json: 'answer' must be a string"),
        ('{"steps": []}', r"calls.json: unknown keys \['steps'\]"),
    ],
)
def test_a_malformed_calls_json_names_the_file_and_entry(tmp_path, calls, message):
    with pytest.raises(TaskError, match=message):
        load_task(make_tool_task(tmp_path / "t", raw_calls=calls))


def test_unknown_gym_and_missing_verifiers_are_clear(tmp_path):
    task_dir = make_tool_task(tmp_path / "t", toml_extra='gyms = ["no-such-gym", "other"]')
    import shutil

    shutil.rmtree(task_dir / "environment" / "gym")
    with pytest.raises(TaskError, match=r"task.toml: field 'environment.gyms': unknown gym 'no-such-gym'"):
        load_task(task_dir)
    other = make_tool_task(tmp_path / "u")
    (other / "tests" / "verifiers.json").unlink()
    with pytest.raises(TaskError, match=r"tests/verifiers.json: missing"):
        load_task(other)


def test_a_broken_tool_task_in_a_dataset_is_reported_and_skipped(tmp_path):
    make_tool_task(tmp_path / "ds" / "good")
    make_tool_task(tmp_path / "ds" / "bad", raw_verifiers="[")
    ds = load_dataset(tmp_path / "ds")
    assert [t.name for t in ds.tasks] == ["good"]
    assert len(ds.errors) == 1 and "bad/tests/verifiers.json" in str(ds.errors[0])
