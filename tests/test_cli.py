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
    assert set(rows) == {"good", "vacuous", "unsolvable"}
    assert rows["good"]["verdict"] == "ok"
    assert rows["good"]["oracle"] == {"reward": 1.0, "outcome": "passed", "exception": None}
    assert rows["good"]["nop"]["reward"] == 0.0 and rows["good"]["nop"]["outcome"] == "failed"
    assert rows["vacuous"]["verdict"] == "vacuous"
    assert rows["unsolvable"]["verdict"] == "unsolvable"
    assert "1/3 tasks ok" in r.stdout


def test_check_needs_a_dataset():
    r = agentmill("check")
    assert r.returncode == 2 and "DATASET" in r.stderr


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
