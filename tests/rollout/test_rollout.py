"""Rollouts through the CLI as a user runs them: resume, refusal, retry, status, and SIGKILL safety."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REWARD_IF, sandbox, simple_task
from tests.helpers.chat_server import ChatServer, Reply, queue, solving_policy

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]


def agentmill(*args, timeout=300):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def make_dataset(root, n=3):
    for i in range(n):  # distinct content: identical tasks would share their trials
        simple_task(root, f"task{i}", solve_sh=f"echo hello > /app/out.txt  # variant {i}\n")
    simple_task(
        root,
        "unsolvable",
        solve_sh="echo nope > /app/out.txt\n",
        test_sh=REWARD_IF.format(cond="grep -qx goodbye /app/out.txt"),
    )
    return root


def status(run):
    r = agentmill("status", str(run), "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_oracle_rollout_resume_and_status(tmp_path):
    data = make_dataset(tmp_path / "ds")
    run = tmp_path / "run"
    r = agentmill("rollout", str(data), "--agent", "oracle", "--attempts", "2", "--out", str(run), "-c", "4")
    assert r.returncode == 0, r.stderr
    s = status(run)
    assert s["done"] == 8 and s["outcomes"] == {"failed": 2, "passed": 6}
    assert s["pass_at_k"]["1"]["mean"] == pytest.approx(0.75) and s["pass_at_k"]["2"]["mean"] == pytest.approx(0.75)
    assert s["pass_at_k"]["1"]["se"] == pytest.approx(0.25)
    ids = {t["trial_id"] for t in s["trial_list"]}
    assert len(ids) == 8
    folder = run / "trials" / next(iter(ids))
    assert {p.name for p in folder.iterdir()} == {
        "trial.json",
        "trajectory.json",
        "result.json",
        "telemetry.json",
        "verifier",
    }
    traj = json.loads((folder / "trajectory.json").read_text())
    assert traj["schema_version"] == "ATIF-v1.4" and traj["agent"]["name"] == "oracle"
    # resuming runs nothing again
    r = agentmill("rollout", str(data), "--agent", "oracle", "--attempts", "2", "--out", str(run))
    assert "0 trials run, 8 already done" in r.stderr
    # more attempts add only the new ones
    r = agentmill("rollout", str(data), "--agent", "oracle", "--attempts", "3", "--out", str(run))
    assert "4 trials run, 8 already done" in r.stderr
    assert status(run)["done"] == 12


def test_resume_with_changed_identity_is_refused(tmp_path):
    data = make_dataset(tmp_path / "ds", n=1)
    run = tmp_path / "run"
    with ChatServer(solving_policy({"hello": "echo hello > /app/out.txt\n"})) as srv:
        base = [
            "rollout",
            str(data),
            "--agent",
            "terminus",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--out",
            str(run),
        ]
        assert agentmill(*base, "--temperature", "0.5").returncode == 0
        r = agentmill(*base, "--temperature", "0.9")
        assert r.returncode == 2 and "temperature 0.5 -> 0.9" in r.stderr and "refusing to resume" in r.stderr
        r = agentmill(
            *[
                "rollout",
                str(data),
                "--agent",
                "terminus",
                "--model",
                "other",
                "--base-url",
                srv.base_url,
                "--out",
                str(run),
                "--temperature",
                "0.5",
            ]
        )
        assert r.returncode == 2 and "model: 'm' -> 'other'" in r.stderr
    (data / "task0" / "instruction.md").write_text("Write hello, please, into /app/out.txt.")
    r = agentmill(
        "rollout",
        str(data),
        "--agent",
        "terminus",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--out",
        str(run),
        "--temperature",
        "0.5",
    )
    assert r.returncode == 2 and "tasks: 1 edited since the run began (task0)" in r.stderr


def test_endpoint_port_change_resumes_and_retry_infra_reruns_only_infra(tmp_path):
    data = make_dataset(tmp_path / "ds", n=2)
    run = tmp_path / "run"
    args = ["--agent", "terminus", "--model", "m", "--out", str(run), "--max-retries", "1", "--temperature", "0"]
    with ChatServer(queue(Reply(status=503))) as down:
        r = agentmill("rollout", str(data), "--base-url", down.base_url, *args)
    assert r.returncode == 3, r.stderr  # every trial ended infra_error: the exit code says so
    assert status(run)["outcomes"] == {"infra_error": 3}
    assert f"{down.base_url}: 3 failed; most common: HTTP 503" in r.stderr
    solver = solving_policy({"hello": "echo hello > /app/out.txt\n"})
    with ChatServer(solver) as up:  # a different port: same trials
        r = agentmill("rollout", str(data), "--base-url", up.base_url, *args)
        assert "0 trials run, 3 already done" in r.stderr
        assert "rerun them with: agentmill rollout" in r.stderr and "--retry infra" in r.stderr
        r = agentmill("rollout", str(data), "--base-url", up.base_url, *args, "--retry", "infra")
        assert "3 trials run" in r.stderr
        s = status(run)
        assert s["outcomes"] == {"failed": 1, "passed": 2}
        assert s["tokens"]["prompt"] > 0
        assert s["telemetry"]["trajectories"] == 3 and s["telemetry"]["mean_assistant_turns"] > 0
        # agent failures are not infrastructure: nothing reruns
        r = agentmill("rollout", str(data), "--base-url", up.base_url, *args, "--retry", "infra")
        assert "0 trials run, 3 already done" in r.stderr


def test_sigkill_at_random_moments_then_resume(tmp_path):
    """Kill -9 the rollout at 10 random moments, resuming each time: every trial ends exactly once."""
    data = tmp_path / "ds"
    for i in range(6):
        # long enough that a whole run outlasts several kill windows, however fast the harness gets
        simple_task(data, f"t{i}", solve_sh=f"sleep 1.{i}; echo hello > /app/out.txt\n")
    run = tmp_path / "run"
    cmd = [*CLI, "rollout", str(data), "--agent", "oracle", "--attempts", "3", "--out", str(run), "-c", "4"]
    rng = random.Random(1234)
    kills = 0
    for _ in range(10):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.3, 2.5))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    s = status(run)
    assert kills >= 3, "the run finished too fast to be interrupted"
    assert s["done"] == 18 and s["running"] == 0
    assert s["outcomes"] == {"passed": 18}
    trial_dirs = [p for p in (run / "trials").iterdir()]
    assert sorted(p.name for p in trial_dirs) == sorted(t["trial_id"] for t in s["trial_list"])
    for p in trial_dirs:  # every folder is whole
        assert json.loads((p / "result.json").read_text())["outcome"] == "passed"
