"""A recipe's rollout stage never pays twice: trials whose identity is unchanged are reused from any
earlier run sharing the cache. Driven through `agentmill run` as a user runs it."""

import json
import os
import subprocess
import sys

from tests.conftest import sandbox, simple_task

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]

RECIPE = """
[recipe]
name = "reuse"
seed = 3

[[sources]]
name = "hello"
path = "ds"

[mix]
budget = {budget}

[rollout]
agent = "oracle"
concurrency = 4

[trace_filters]
min_turns = 0

[[exports]]
format = "trl"
file = "trl.jsonl"
"""


def run_recipe(tmp_path, budget, out):
    recipe = tmp_path / f"recipe-{budget}.toml"
    recipe.write_text(RECIPE.format(budget=budget))
    return subprocess.run(
        [*CLI, "run", str(recipe), "--out", str(tmp_path / out), "--cache", str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "250"},
    )


def test_lowering_the_mix_budget_reruns_nothing(tmp_path):
    for i in range(12):
        simple_task(tmp_path / "ds", f"t{i:02d}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    first = run_recipe(tmp_path, 12, "run12")
    assert first.returncode == 0, first.stderr
    assert "rollout: 12 trials (12 run now, 0 reused from earlier runs, 0 already done)" in first.stderr
    second = run_recipe(tmp_path, 9, "run9")
    assert second.returncode == 0, second.stderr
    assert "rollout: 9 trials (0 run now, 9 reused from earlier runs, 0 already done)" in second.stderr
    # the new run folder is whole and stands on its own: its own ledger, folders and export
    r = subprocess.run([*CLI, "status", str(tmp_path / "run9"), "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["planned"] == s["done"] == 9 and s["outcomes"] == {"passed": 9}
    rollout = (tmp_path / "run9" / "rollout").resolve()
    for tid in (t["trial_id"] for t in s["trial_list"]):
        record = json.loads((rollout / "trials" / tid / "trial.json").read_text())
        assert record["reused_from"] == str(tmp_path / "cache" / "trials")
        assert record["task_source"].startswith("recipe:")
    rows = (tmp_path / "run9" / "exports" / "trl.jsonl").read_text().splitlines()
    assert len(rows) == 9
    # a changed identity (a new attempt count) reuses what it can and runs only the rest
    recipe = tmp_path / "recipe-attempts.toml"
    recipe.write_text(RECIPE.format(budget=9).replace("concurrency = 4", "concurrency = 4\nattempts = 2"))
    third = subprocess.run(
        [*CLI, "run", str(recipe), "--out", str(tmp_path / "run9x2"), "--cache", str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert third.returncode == 0, third.stderr
    assert "rollout: 18 trials (9 run now, 9 reused from earlier runs, 0 already done)" in third.stderr


def test_status_reads_a_recipe_run_folder_or_says_what_it_needs(tmp_path):
    for i in range(2):
        simple_task(tmp_path / "ds", f"t{i:02d}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    assert run_recipe(tmp_path, 2, "run").returncode == 0
    r = subprocess.run(
        [*CLI, "status", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert r.returncode == 0, r.stderr
    assert "2 planned: 2 done" in r.stdout
    r = subprocess.run([*CLI, "status", str(tmp_path / "ds")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "not a run folder (no ledger.sqlite)" in r.stderr


def test_ctrl_c_in_a_recipe_rollout_says_what_finished_and_how_to_resume(tmp_path):
    import re
    import signal
    import sqlite3
    import time

    for i in range(6):
        simple_task(tmp_path / "ds", f"t{i:02d}", solve_sh=f"sleep 2; echo hello > /app/out.txt  # {i}\n")
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(RECIPE.format(budget=6).replace("concurrency = 4", "concurrency = 2"))
    cmd = [*CLI, "run", str(recipe), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finished():
        for db in (tmp_path / "cache").glob("rollout/*/run/ledger.sqlite"):
            try:
                con = sqlite3.connect(db, timeout=5)
                n = con.execute("SELECT COUNT(*) FROM trials WHERE state='done'").fetchone()[0]
                con.close()
                return n
            except sqlite3.Error:
                return 0
        return 0

    try:
        deadline = time.monotonic() + 180
        while finished() < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    m = re.search(r"rollout interrupted: (\d+) of 6 trials finished; (\d+) in flight were lost", err)
    assert m and 1 <= int(m.group(1)) < 6, err
    assert f"resume with: agentmill run {recipe} --out {tmp_path / 'run'} --cache {tmp_path / 'cache'}" in err
    assert "Traceback" not in err
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    resumed = re.search(
        r"rollout: 6 trials \((\d+) run now, 0 reused from earlier runs, (\d+) already done\)", again.stderr
    )
    assert resumed, again.stderr
    ran, already = map(int, resumed.groups())
    assert ran + already == 6 and already >= int(m.group(1))  # nothing finished was run again
