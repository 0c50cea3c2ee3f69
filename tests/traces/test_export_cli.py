"""`agentmill export` as a user runs it: zero rows is never silent, rl rows ignore trace-length rules,
ShareGPT merges into an existing dataset_info.json, a recipe run folder is accepted like a rollout
folder, and broken trial folders are reported, not fatal."""

import json
import subprocess
import sys

import pytest

from tests.traces.builders import terminus_trajectory, write_trial

AGENTMILL = [sys.executable, "-m", "agentmill.cli"]


def agentmill(*args):
    return subprocess.run([*AGENTMILL, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def rollout(tmp_path):
    """Three short passed traces (2 turns) of two tasks, and one agent_error."""
    run = tmp_path / "rollout"
    for i in range(3):
        write_trial(run, f"t{i}", terminus_trajectory([("ls\n", "a"), ("pwd\n", "/app")]), task=f"task{i % 2}")
    write_trial(run, "err", terminus_trajectory([("ls\n", "a")]), outcome="agent_error", reward=None, task="task0")
    return run


def test_zero_rows_names_the_rule_and_exits_non_zero(rollout, tmp_path):
    out = tmp_path / "o.jsonl"
    r = agentmill("export", str(rollout), "--format", "trl", "--out", str(out))  # default min_turns 5
    assert r.returncode == 2
    assert (
        "0 rows: the trace filter 'min_turns' (>= 5 assistant turns, 2 for tool-calling agents) removed the last 3 traces"
        in r.stderr
    )
    assert "lower --min-turns" in r.stderr and "--allow-empty" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()

    r = agentmill(
        "export", str(rollout), "--format", "trl", "--out", str(out), "--reward", "failure", "--min-turns", "0"
    )
    assert r.returncode == 2 and "the trace filter 'reward'" in r.stderr and "--reward any" in r.stderr

    r = agentmill("export", str(rollout), "--format", "trl", "--out", str(out), "--allow-empty")
    assert r.returncode == 0, r.stderr
    assert out.exists() and out.read_text() == "" and "0 rows" in r.stderr


def test_empty_run_says_there_is_nothing_to_export(tmp_path):
    (tmp_path / "empty" / "trials").mkdir(parents=True)
    r = agentmill("export", str(tmp_path / "empty"), "--format", "trl", "--out", str(tmp_path / "o.jsonl"))
    assert r.returncode == 2 and "no finished trials" in r.stderr


def test_rl_rows_ignore_trace_length_rules(rollout, tmp_path):
    r = agentmill(
        "export",
        str(rollout),
        "--format",
        "rl",
        "--out",
        str(tmp_path / "rl.jsonl"),
        "--min-turns",
        "5",
        "--max-tokens",
        "1",
    )
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (tmp_path / "rl.jsonl").read_text().splitlines()]
    assert sorted(row["extra_info"]["task"] for row in rows) == ["task0", "task1"]
    assert "min_turns" not in r.stderr and "max_tokens" not in r.stderr  # not in the funnel at all
    # the outcome rule still applies: the agent_error trial does not count towards task0's attempts
    assert {row["extra_info"]["task"]: row["extra_info"]["teacher_attempts"] for row in rows} == {
        "task0": 2,
        "task1": 1,
    }
    # the same length rules still drop SFT rows
    r = agentmill("export", str(rollout), "--format", "trl", "--out", str(tmp_path / "t.jsonl"), "--min-turns", "5")
    assert r.returncode == 2


def test_sharegpt_merges_an_existing_dataset_info(rollout, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    mine = {"my_sft": {"file_name": "mine.json", "formatting": "alpaca"}}
    (data / "dataset_info.json").write_text(json.dumps(mine))
    r = agentmill(
        "export", str(rollout), "--format", "sharegpt", "--out", str(data / "agent.jsonl"), "--min-turns", "1"
    )
    assert r.returncode == 0, r.stderr
    info = json.loads((data / "dataset_info.json").read_text())
    assert info["my_sft"] == mine["my_sft"] and info["agent"]["file_name"] == "agent.jsonl"
    r = agentmill("export", str(rollout), "--format", "sharegpt", "--out", str(data / "more.jsonl"), "--min-turns", "1")
    assert set(json.loads((data / "dataset_info.json").read_text())) == {"my_sft", "agent", "more"}

    (data / "dataset_info.json").write_text("[1, 2]")  # not ours to overwrite: refuse, naming the file
    r = agentmill("export", str(rollout), "--format", "sharegpt", "--out", str(data / "x.jsonl"), "--min-turns", "1")
    assert r.returncode == 2 and "dataset_info.json: cannot merge into it" in r.stderr and "Traceback" not in r.stderr
    assert (data / "dataset_info.json").read_text() == "[1, 2]"


def test_export_and_report_accept_a_recipe_run_folder(rollout, tmp_path):
    recipe_run = tmp_path / "recipe-run"
    recipe_run.mkdir()
    (recipe_run / "rollout").symlink_to(rollout)  # as `agentmill run` leaves it
    a = agentmill("export", str(recipe_run), "--format", "trl", "--out", str(tmp_path / "a.jsonl"), "--min-turns", "1")
    b = agentmill("export", str(rollout), "--format", "trl", "--out", str(tmp_path / "b.jsonl"), "--min-turns", "1")
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text() and "3 rows" in a.stderr

    for folder in (recipe_run, rollout):  # the report reads either kind
        r = agentmill("report", str(folder), "--out", str(tmp_path / f"{folder.name}.html"))
        assert r.returncode == 0, r.stderr
        html = (tmp_path / f"{folder.name}.html").read_text()
        assert "agent_error" in html and "No rollout in this run" not in html

    (tmp_path / "nothing").mkdir()
    r = agentmill("export", str(tmp_path / "nothing"), "--format", "trl", "--out", str(tmp_path / "c.jsonl"))
    assert r.returncode == 2 and "not a run folder" in r.stderr


def test_broken_trial_folder_is_reported_and_skipped(rollout, tmp_path):
    (rollout / "trials" / "t1" / "result.json").write_text('{"outcome": ')
    (rollout / "trials" / "t2" / "trial.json").write_text('["not", "an", "object"]')
    r = agentmill("export", str(rollout), "--format", "trl", "--out", str(tmp_path / "o.jsonl"), "--min-turns", "1")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "skipped:" in r.stderr and "t1" in r.stderr and "t2" in r.stderr
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 1


def test_parquet_is_written_in_row_groups_under_one_unified_schema(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from agentmill.traces import writer

    monkeypatch.setattr(writer, "PARQUET_BATCH", 2)
    rows = [
        {"tools": None, "messages": [{"role": "user", "content": "a"}]},
        {"tools": None, "messages": [{"role": "user", "content": "b"}]},
        {"tools": [{"name": "bash"}], "messages": [{"role": "assistant", "content": "c", "tool_calls": [{"id": "1"}]}]},
    ]
    assert writer.write_rows(iter(rows), tmp_path / "o.parquet") == 3
    f = pq.ParquetFile(tmp_path / "o.parquet")
    assert f.metadata.num_row_groups == 2  # streamed in batches, not one table
    assert f.read().to_pylist() == pa.Table.from_pylist(rows).to_pylist()  # what one table of every row gives
    assert not list(tmp_path.glob(".*"))  # no spool or temporary file left behind


def test_workers_flag_writes_the_same_rows(tmp_path):
    from tests.traces.builders import write_varied_run

    run = tmp_path / "varied"
    write_varied_run(run, 40)
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}.jsonl"
        r = agentmill(
            "export", str(run), "--format", "sharegpt", "--out", str(out), "--min-turns", "0", "--workers", workers
        )
        assert r.returncode == 0, r.stderr
        assert "skipped:" in r.stderr and "broken" in r.stderr  # the unreadable folder is reported either way
        outs.append((out.read_bytes(), r.stderr.replace(str(out), "OUT")))
    assert outs[0] == outs[1] and outs[0][0].count(b"\n") > 10
