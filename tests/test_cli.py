"""The CLI as a user runs it: a real subprocess, real sandbox."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import sandbox, scratch_cache, simple_task

AGENTMILL = [sys.executable, "-m", "agentmill.cli"]


def agentmill(*args, **kw):
    return subprocess.run([*AGENTMILL, *args], capture_output=True, text=True, timeout=300, **kw)


@sandbox
def test_check_json_and_broken_tasks(tmp_path):
    data = tmp_path / "ds"
    simple_task(data, "good")
    simple_task(data, "vacuous", test_sh="echo 1 > /logs/verifier/reward.txt\n")
    simple_task(data, "unsolvable", solve_sh="echo goodbye > /app/out.txt\n")
    (simple_task(data, "broken") / "task.toml").write_text("[agent]\ntimeout_sec = 'x'\n")
    out = tmp_path / "check.json"
    r = agentmill("check", str(data), "--json", str(out), "--concurrency", "3")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "broken/task.toml: field 'agent.timeout_sec'" in r.stderr
    rows = {row["task"]: row for row in json.loads(out.read_text())}
    assert set(rows) == {"good", "vacuous", "unsolvable", "broken"}
    assert rows["broken"]["verdict"] == "broken" and rows["broken"]["oracle"] is None
    assert "broken/task.toml: field 'agent.timeout_sec'" in rows["broken"]["reason"]
    assert rows["good"]["verdict"] == "ok"
    good = rows["good"]["oracle"]
    assert {k: good[k] for k in ("reward", "outcome", "exception")} == {
        "reward": 1.0,
        "outcome": "passed",
        "exception": None,
    }
    assert Path(good["trial_dir"], "result.json").is_file() and good["notes"] == []
    assert rows["unsolvable"]["reason"].startswith("oracle: ")  # the oracle's own cause (the test's output)
    assert rows["good"]["nop"]["reward"] == 0.0 and rows["good"]["nop"]["outcome"] == "failed"
    assert rows["vacuous"]["verdict"] == "vacuous"
    assert rows["unsolvable"]["verdict"] == "unsolvable"
    assert "1/4 ok, 1 broken, 1 unsolvable, 1 vacuous" in r.stdout
    assert "progress: 3/3 tasks done, 1 ok, 2 failed" in r.stderr  # plain lines when not on a terminal
    assert "\x1b[" not in r.stderr


def test_check_needs_a_dataset():
    r = agentmill("check")
    assert r.returncode == 2 and "DATASET" in r.stderr


@sandbox
def test_check_sample_tools_runs_the_bundled_tool_tasks(tmp_path):
    out = tmp_path / "check.json"
    r = agentmill("check", "--sample-tools", "-t", "itsm-resolve-printer-incident", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    [row] = json.loads(out.read_text())
    assert row["task"] == "itsm-resolve-printer-incident" and row["verdict"] == "ok"
    assert row["oracle"]["reward"] == 1.0 and row["nop"]["reward"] < 1.0
    both = agentmill("check", "--sample", "--sample-tools")
    assert both.returncode == 2 and "one of them" in both.stderr


def test_check_missing_folder(tmp_path):
    r = agentmill("check", str(tmp_path / "nope"))
    assert r.returncode == 2 and "nope: dataset folder not found" in r.stderr


@sandbox
def test_sandbox_run_prints_output_and_exit_code(tmp_path):
    ws = scratch_cache(tmp_path) / "ws"
    ws.mkdir()
    r = agentmill("sandbox", "run", "--workspace", str(ws), "--", "sh", "-c", "echo hi; echo made > f; exit 3")
    assert r.returncode == 3
    assert r.stdout == "hi\n" and "exit code: 3" in r.stderr
    assert (ws / "f").read_text() == "made\n"
    assert (ws / "f").stat().st_uid == ws.stat().st_uid == os.getuid()  # handed back to its owner


@sandbox
def test_sandbox_run_timeout():
    r = agentmill("sandbox", "run", "--timeout", "1", "--", "sleep", "30")
    assert r.returncode == 124 and "timed out" in r.stderr


@sandbox
def test_sandbox_run_refuses_unreachable_workspace(tmp_path):
    if os.geteuid() != 0:
        return
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    r = agentmill("sandbox", "run", "--workspace", str(locked / "ws"), "--", "true")
    assert r.returncode == 2 and "cannot enter" in r.stderr and str(locked) in r.stderr


def test_unknown_task_names_are_listed_with_close_matches(tmp_path):
    data = tmp_path / "ds"
    for name in ("csv-report", "json-report", "git-revert"):
        simple_task(data, name)
    for verb in (["check"], ["rollout", "--agent", "oracle", "--out", str(tmp_path / "run")]):
        r = agentmill(*verb, str(data), "-t", "csv-report", "-t", "jsn-report", "-t", "zzz")
        assert r.returncode == 2, r.stderr
        assert f"--task: unknown task names in {data}: jsn-report (did you mean: json-report" in r.stderr
        assert r.stderr.rstrip().endswith("; zzz") and "csv-report;" not in r.stderr
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists()  # nothing started


@sandbox
def test_printed_exit_codes_match_the_process_exit_code():
    for command, code in (
        (["sh", "-c", "exit 7"], 7),
        (["sh", "-c", "kill -9 $$"], 137),
        (["sh", "-c", "kill -TERM $$"], 143),
    ):
        r = agentmill("sandbox", "run", "--", *command)
        assert r.returncode == code, r.stderr
        assert f"exit code: {code}" in r.stderr
    r = agentmill("sandbox", "run", "--timeout", "1", "--", "sleep", "30")
    assert r.returncode == 124 and "exit code: 124 (timed out)" in r.stderr


def _commands():
    import typer.main

    from agentmill.cli import app

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*path, name])
        else:
            yield path, cmd

    return list(walk(typer.main.get_command(app), []))


def test_help_shows_every_option_with_a_line_and_its_default():
    commands = _commands()
    assert len(commands) >= 10
    for path, cmd in commands:
        r = agentmill(*path, "--help", env={**os.environ, "COLUMNS": "2000"})
        assert r.returncode == 0, r.stderr
        text = " ".join(r.stdout.split())  # wrapped lines joined
        for param in cmd.params:
            if param.name == "help" or param.param_type_name == "argument":
                continue
            assert param.help, f"agentmill {' '.join(path)} {param.opts[0]} has no help line"
            assert " ".join(param.help.split()) in text, f"{path} {param.opts[0]}: help not shown"
            shown = param.default not in (None, False, (), []) and not param.required
            if shown:
                default = param.default if not isinstance(param.default, float) else param.default
                assert f"[default: {default}" in text, f"agentmill {' '.join(path)} {param.opts[0]}: default not shown"


def test_the_old_env_command_is_a_hidden_alias_of_tools():
    wide = {**os.environ, "COLUMNS": "2000"}
    listed = agentmill("--help", env=wide).stdout.split()
    assert "tools" in listed and "env" not in listed  # hidden from --help
    for sub in ("serve", "export-eog"):
        new, old = agentmill("tools", sub, "--help", env=wide), agentmill("env", sub, "--help", env=wide)
        assert new.returncode == old.returncode == 0, old.stderr
        assert old.stdout.replace("cli env ", "cli tools ", 1) == new.stdout  # the same command


def test_square_brackets_in_help_are_text_not_markup():
    r = agentmill("export", "--help", env={**os.environ, "COLUMNS": "2000"})
    assert "TOML file with a [filters] table" in " ".join(r.stdout.split())
