"""RL rows are portable: a task is named by its content hash and found again wherever the tasks are
given at training time; the prompt is the agent's opening (system prompt, then the task)."""

from __future__ import annotations

import json
import shutil

import pytest

from agentmill.agents.terminus import prompt as terminus_prompt
from agentmill.errors import AgentmillError
from agentmill.rl import TaskNotFound, TaskResolver
from agentmill.rl.resolve import TASKS_ENV, shared_resolver
from tests.conftest import sandbox, simple_task
from tests.rl.conftest import TERMINAL, TOOLS


@sandbox
def test_rows_name_tasks_by_hash_with_index_and_the_agents_opening(rl_export):
    rows = rl_export.rows
    assert sorted(r["extra_info"]["task"] for r in rows) == sorted(TERMINAL + TOOLS)
    text = json.dumps(rows)
    assert str(rl_export.old_dir) not in text and "task_path" not in text  # no local path travels with the rows
    for r in rows:
        info = r["extra_info"]
        assert r["reward_model"] == {"style": "environment", "ground_truth": info["task_hash"]}
        assert info["interaction_kwargs"] == {"name": "agentmill", "task_hash": info["task_hash"]}
        assert isinstance(info["index"], int)
    term = rl_export.row(TERMINAL[0])
    assert term["extra_info"]["agent"] == "terminus"
    assert [m["role"] for m in term["prompt"]] == ["system", "user"]
    assert term["prompt"][0]["content"] == terminus_prompt.SYSTEM  # exactly what terminus sent the teacher
    assert "Task:" in term["prompt"][1]["content"] and "Current terminal screen:" in term["prompt"][1]["content"]
    tools = rl_export.row(TOOLS[0])
    assert tools["extra_info"]["agent"] == "tools" and tools["prompt"][0]["role"] == "system"
    assert "resolve_incident" in tools["extra_info"]["tools"]


@sandbox
def test_moved_rows_still_resolve(rl_export):
    assert not rl_export.old_dir.exists()
    resolver = TaskResolver([rl_export.tasks_dir.parent])  # a folder above the dataset is searched too
    for r in rl_export.rows:
        task = resolver.resolve(r["reward_model"]["ground_truth"])
        assert task.name == r["extra_info"]["task"] and task.path.is_relative_to(rl_export.tasks_dir)


@sandbox
def test_an_edited_task_no_longer_resolves(rl_export, tmp_path):
    copy = tmp_path / "edited"
    shutil.copytree(rl_export.tasks_dir, copy)
    row = rl_export.row(TERMINAL[0])
    (copy / TERMINAL[0] / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    with pytest.raises(TaskNotFound, match=row["reward_model"]["ground_truth"][:16]):
        TaskResolver([copy]).resolve(row["reward_model"]["ground_truth"])
    assert TaskResolver([copy]).resolve(rl_export.row(TERMINAL[1])["reward_model"]["ground_truth"]).name == TERMINAL[1]


def test_broken_task_folders_are_reported_and_skipped(tmp_path):
    simple_task(tmp_path, "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "task.toml").write_text("this is = = not toml")
    resolver = TaskResolver([tmp_path])
    assert [t.name for t in resolver.index().values()] == ["good"]
    assert len(resolver.errors) == 1 and "bad" in str(resolver.errors[0])


def test_task_folders_come_from_the_environment_when_not_given(tmp_path, monkeypatch):
    monkeypatch.delenv(TASKS_ENV, raising=False)
    with pytest.raises(AgentmillError, match=TASKS_ENV):
        shared_resolver(None)
    with pytest.raises(AgentmillError, match="task folder not found"):
        TaskResolver([tmp_path / "missing"])
    monkeypatch.setenv(TASKS_ENV, str(tmp_path))
    assert shared_resolver(None).roots == [tmp_path.resolve()]


def test_grpo_rows_keep_only_what_the_reward_needs_and_skip_rows_that_are_not_rl_rows(tmp_path):
    from agentmill.rl.grpo import rl_dataset_rows

    good = {
        "data_source": "agentmill/x",
        "prompt": [{"role": "user", "content": "go"}],
        "ability": "agentic/terminal",
        "reward_model": {"style": "environment", "ground_truth": "abc"},
        "extra_info": {"task_hash": "abc", "agent": "terminus", "index": 0, "tools": "[]"},
    }
    trl_row = {"messages": [{"role": "user", "content": "go"}], "tools": "[]"}
    rows, skipped = rl_dataset_rows([good, trl_row, "not a row"])
    assert rows == [
        {
            "prompt": good["prompt"],
            "reward_model": {"ground_truth": "abc"},
            "extra_info": {"task_hash": "abc", "agent": "terminus"},
        }
    ]
    assert [s.split(":")[0] for s in skipped] == ["row 1", "row 2"] and all("not an `rl` row" in s for s in skipped)
    from tests.rl.conftest import HAVE_TRAIN

    if HAVE_TRAIN:  # with nothing left, one error before any model is loaded
        from agentmill.rl.grpo import build_grpo

        data = tmp_path / "trl.jsonl"
        data.write_text(json.dumps(trl_row) + "\n")
        with pytest.raises(AgentmillError, match=r"no RL row to train on.*row 0: not an `rl` row"):
            build_grpo(tmp_path, [data], [tmp_path], tmp_path / "out")
