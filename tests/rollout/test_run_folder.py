"""One writer per run folder, typed harness failures, moved datasets, Ctrl-C, status: through the CLI."""

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time

from agentmill.tasks import write_task
from tests.conftest import REWARD_IF, sandbox, simple_task
from tests.helpers.chat_server import ChatServer, Reply, solving_policy

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]


def agentmill(*args, env=None, timeout=300):
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def status(run):
    r = agentmill("status", str(run), "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def slow_dataset(root, n, seconds):
    for i in range(n):
        simple_task(root, f"slow{i}", solve_sh=f"sleep {seconds}; echo hello > /app/out.txt  # {i}\n")
    return root


def ledger_counts(run):
    db = run / "ledger.sqlite"
    if not db.exists():
        return 0, 0
    try:
        con = sqlite3.connect(db, timeout=5)
        rows = con.execute("SELECT state, COUNT(*) FROM trials GROUP BY state").fetchall()
        con.close()
    except sqlite3.Error:
        return 0, 0
    counts = dict(rows)
    return counts.get("running", 0), counts.get("done", 0)


def wait_for(predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_second_rollout_on_the_same_folder_is_refused_naming_the_holder(tmp_path):
    data = slow_dataset(tmp_path / "ds", 4, 2)
    run = tmp_path / "run"
    cmd = [*CLI, "rollout", str(data), "--agent", "oracle", "--out", str(run), "-c", "2"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: ledger_counts(run)[0] > 0), "the first rollout never started a trial"
        second = agentmill("rollout", str(data), "--agent", "oracle", "--out", str(run), "-c", "2")
        assert second.returncode == 2, second.stderr
        assert f"pid {first.pid} on host {socket.gethostname()}" in second.stderr
        assert "another agentmill rollout is using this run folder" in second.stderr
        _, err = first.communicate(timeout=300)
    finally:
        first.kill()
    assert first.returncode == 0, err
    s = status(run)
    assert s["planned"] == s["done"] == 4 and s["outcomes"] == {"passed": 4}
    for trial in (run / "trials").iterdir():  # the first run's folders are whole: nothing deleted under it
        assert json.loads((trial / "result.json").read_text())["outcome"] == "passed"
    # the lock dies with its holder: a resume afterwards is welcome
    r = agentmill("rollout", str(data), "--agent", "oracle", "--out", str(run))
    assert r.returncode == 0 and "0 trials run, 4 already done" in r.stderr


FAULTS = textwrap.dedent('''
    """Injected faults for one test run: they stand where the real parts stand (uid pool, copy, verifier)."""
    import itertools, os, subprocess
    import agentmill.images.build as build
    import agentmill.verify.test_script as test_script  # a terminal task's verifier, imported where it is called
    import agentmill.sandbox.bwrap as bwrap

    _leases = itertools.count(1)
    _real_lease = bwrap.lease_uid

    def lease_uid():
        if next(_leases) == int(os.environ["FAULT_UID_AT"]):
            raise RuntimeError("no free sandbox uid: too many sandboxes at once")
        return _real_lease()

    bwrap.lease_uid = lease_uid
    _real_instantiate = build.Image.instantiate

    def instantiate(self, dest):
        if self.env.get("FAULT") == "copy":  # a real cp that fails
            subprocess.run(["cp", "-a", str(self.rootfs) + "-missing", str(dest)], check=True, capture_output=True)
        return _real_instantiate(self, dest)

    build.Image.instantiate = instantiate
    _real_verify = test_script.verify

    async def verify(task, *args, **kw):
        if task.name == "boom":
            raise ValueError("an unexpected bug in the harness")
        return await _real_verify(task, *args, **kw)

    test_script.verify = verify
''')


def test_failures_inside_trials_end_typed_and_the_run_goes_on(tmp_path):
    data = tmp_path / "ds"
    for i in range(3):
        simple_task(data, f"a{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    simple_task(data, "copyfail", dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nENV FAULT=copy\n")
    simple_task(data, "boom", solve_sh="echo hello > /app/out.txt  # boom\n")
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(FAULTS)
    run = tmp_path / "run"
    # one trial at a time: a0 leases uids 1-2, a1 leases 3 (fails), a2 4-5, boom 6-7, copyfail none
    r = agentmill(
        "rollout",
        str(data),
        "--agent",
        "oracle",
        "--out",
        str(run),
        "-c",
        "1",
        env={"PYTHONPATH": f"{inject}:{os.environ.get('PYTHONPATH', '')}", "FAULT_UID_AT": "3"},
    )
    assert r.returncode == 0, r.stderr
    assert "5 trials run" in r.stderr
    results = {
        json.loads((p / "result.json").read_text())["task"]: json.loads((p / "result.json").read_text())
        for p in (run / "trials").iterdir()
    }
    assert set(results) == {"a0", "a1", "a2", "copyfail", "boom"}
    assert results["a1"]["outcome"] == "sandbox_error" and "no free sandbox uid" in results["a1"]["exception"]
    assert results["copyfail"]["outcome"] == "sandbox_error"
    assert "could not copy the environment" in results["copyfail"]["exception"]
    assert results["boom"]["outcome"] == "sandbox_error"
    assert "harness error: ValueError: an unexpected bug in the harness" in results["boom"]["exception"]
    assert results["a0"]["outcome"] == results["a2"]["outcome"] == "passed"
    s = status(run)
    assert s["done"] == 5 and s["attempted"] == 2 and s["infra_failures"] == 3
    # the failures are the machinery's: --retry infra reruns exactly them (no faults now)
    r = agentmill("rollout", str(data), "--agent", "oracle", "--out", str(run), "--retry", "infra")
    assert r.returncode == 0 and "3 trials run, 2 already done" in r.stderr
    assert status(run)["outcomes"] == {"passed": 5}


def test_a_moved_dataset_resumes_and_changed_content_is_refused(tmp_path):
    data = tmp_path / "ds"
    for i in range(2):
        simple_task(data, f"t{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    run = tmp_path / "run"
    assert agentmill("rollout", str(data), "--agent", "oracle", "--out", str(run)).returncode == 0
    moved = tmp_path / "elsewhere" / "renamed-ds"
    moved.parent.mkdir()
    data.rename(moved)
    r = agentmill("rollout", str(moved), "--agent", "oracle", "--out", str(run))
    assert r.returncode == 0, r.stderr
    assert "0 trials run, 2 already done" in r.stderr
    assert json.loads((run / "config.json").read_text())["dataset"] == str(moved)  # recorded, not identity
    (moved / "t1" / "instruction.md").write_text("Write hello into /app/out.txt, now.")
    r = agentmill("rollout", str(moved), "--agent", "oracle", "--out", str(run))
    assert r.returncode == 2 and "tasks: 1 edited since the run began (t1)" in r.stderr


def test_ctrl_c_says_what_finished_and_how_to_resume(tmp_path):
    data = slow_dataset(tmp_path / "ds", 6, 2)
    run = tmp_path / "run"
    cmd = [*CLI, "rollout", str(data), "--agent", "oracle", "--out", str(run), "-c", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: ledger_counts(run)[1] >= 1 and ledger_counts(run)[0] >= 1), "no trial finished"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    m = re.search(r"interrupted: (\d+) of 6 trials finished \((\d+) in this session\); (\d+) in flight were lost", err)
    assert m, err
    finished, lost = int(m.group(1)), int(m.group(3))
    assert 1 <= finished < 6 and lost >= 1
    resume = f"resume with: agentmill rollout {data} --agent oracle --out {run} -c 2"
    assert resume in err
    s = status(run)
    assert s["planned"] == 6 and s["done"] == finished and s["running"] == lost
    r = agentmill("status", str(run))
    assert "6 planned" in r.stdout
    # the printed command resumes; the trials lost in flight are counted as recovered
    r = subprocess.run([*CLI, *resume.split("agentmill ", 1)[1].split()], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+) trials run, (\d+) already done, (\d+) recovered", r.stderr)
    assert m, r.stderr
    ran, already, recovered = map(int, m.groups())
    # a trial lost while its folder was being renamed into place is settled from the folder, not rerun
    assert recovered == lost and ran + already == 6 and finished <= already <= finished + lost
    assert status(run)["outcomes"] == {"passed": 6}


def test_status_counts_infrastructure_failures_apart_from_pass_at_k(tmp_path):
    data = tmp_path / "ds"
    for i in range(2):
        simple_task(data, f"ok{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    write_task(
        data / "flaky",
        instruction="FLAKY endpoint: write hello into /app/out.txt.",
        test_sh=REWARD_IF.format(cond="grep -qx hello /app/out.txt"),
        solve_sh="echo hello > /app/out.txt\n",
        dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\n",
    )
    solve = solving_policy({"hello": "echo hello > /app/out.txt\n"})

    def policy(request):
        first_user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        return Reply(status=503) if "FLAKY" in first_user else solve(request)

    run = tmp_path / "run"
    with ChatServer(policy) as srv:
        r = agentmill(
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
            "--max-retries",
            "0",
            "--temperature",
            "0",
        )
    assert r.returncode == 0, r.stderr
    s = status(run)
    assert s["outcomes"] == {"infra_error": 1, "passed": 2}
    assert s["attempted"] == 2 and s["infra_failures"] == 1
    assert s["pass_at_k"]["1"]["mean"] == 1.0  # the endpoint's failure is not the agent's
    text = agentmill("status", str(run), env={"COLUMNS": "250"}).stdout
    assert "1 infrastructure failures counted apart" in text


def test_identity_is_checked_before_a_model_server_starts(tmp_path):
    data = tmp_path / "ds"
    simple_task(data, "t0")
    run = tmp_path / "run"
    with ChatServer(solving_policy({"hello": "echo hello > /app/out.txt\n"})) as srv:
        r = agentmill(
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
            "--temperature",
            "0",
        )
    assert r.returncode == 0, r.stderr
    started = time.monotonic()
    r = agentmill(
        "rollout", str(data), "--agent", "terminus", "--model", "local", "--out", str(run), "--temperature", "0"
    )
    assert r.returncode == 2 and "refusing to resume" in r.stderr and "model: 'm' ->" in r.stderr
    assert "starting the embedded model" not in r.stderr
    assert time.monotonic() - started < 30


def test_progress_prints_plain_lines_with_live_tokens_when_not_a_terminal(tmp_path):
    data = tmp_path / "ds"
    simple_task(data, "t0")
    solve = solving_policy({"hello": "echo hello > /app/out.txt\n"})

    def slow(request):
        reply = solve(request)
        reply.delay = 0.8
        return reply

    run = tmp_path / "run"
    with ChatServer(slow) as srv:
        r = agentmill(
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
            "--temperature",
            "0",
            env={"AGENTMILL_PROGRESS_INTERVAL": "0.3"},
        )
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("progress: ")]
    assert len(lines) >= 3, r.stderr
    before_done = [ln for ln in lines if ln.startswith("progress: 0/1 trials done, 1 running")]
    live = [int(re.search(r"tokens (\d+) in", ln).group(1)) for ln in before_done]
    assert any(t > 0 for t in live), lines  # tokens move per request, before the trial finishes
    assert re.search(r"\d+\.\d\d req/s", before_done[-1])
    assert lines[-1].startswith("progress: 1/1 trials done, 0 running")
    assert "\x1b[" not in r.stderr  # no terminal control sequences in a log
