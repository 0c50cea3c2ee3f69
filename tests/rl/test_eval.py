"""`agentmill eval` measures checkpoints served behind an OpenAI-compatible endpoint (here the
scripted chat server, a real local HTTP server) through the normal rollout machinery, and puts
them in one `agentmill table`: a checkpoint that does nothing and one that solves the tasks."""

from __future__ import annotations

import json
import subprocess
import sys

from agentmill.tasks import sample_dataset_path
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply, solving_policy, terminus_json

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]
TASKS = ("csv-revenue-by-region", "json-users-to-csv")


def agentmill(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)
    if ok:
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def give_up(_request) -> Reply:
    return Reply(terminus_json([], complete=True))


def test_before_and_after_checkpoints_sit_in_one_table(tmp_path):
    root = sample_dataset_path()
    solutions = {
        (root / n / "instruction.md").read_text().strip()[:60]: (root / n / "solution" / "solve.sh").read_text()
        for n in TASKS
    }
    eval_dir = tmp_path / "eval"
    tasks = sum((["--task", n] for n in TASKS), [])
    for label, policy in (("base", give_up), ("trained", solving_policy(solutions))):
        with ChatServer(policy, model=label) as server:
            agentmill(
                "eval",
                "--sample",
                *tasks,
                "--out",
                str(eval_dir),
                "--label",
                label,
                "--model",
                label,
                "--base-url",
                server.base_url,
                "--attempts",
                "2",
                "--benchmark",
                "sample",
                "--scores",
                str(tmp_path / f"{label}-scores.json"),
            )
            assert server.requests and all(r["model"] == label for r in server.requests)  # the checkpoint was asked
    results = json.loads((eval_dir / "results.json").read_text())
    assert results == {
        "base": {"sample pass@1": [0.0, 0.0], "sample pass@2": [0.0, 0.0]},
        "trained": {"sample pass@1": [1.0, 1.0], "sample pass@2": [1.0, 1.0]},
    }
    assert json.loads((tmp_path / "trained-scores.json").read_text()) == results["trained"]  # for `ablate`'s {results}
    telemetry = json.loads((eval_dir / "telemetry.json").read_text())
    base, trained = telemetry["base"]["sample"], telemetry["trained"]["sample"]
    assert base["telemetry"]["trajectories"] == trained["telemetry"]["trajectories"] == 4
    assert base["telemetry"]["premature_completion"] == 4 and trained["telemetry"]["premature_completion"] == 0
    assert trained["telemetry"]["mean_commands"] > base["telemetry"]["mean_commands"] == 0
    assert trained["pass_at_k"]["2"]["mean"] == 1.0 and base["outcomes"] == {"failed": 4}
    table = agentmill("table", str(eval_dir / "results.json")).stdout
    lines = table.splitlines()
    trained_line = next(line for line in lines if "trained" in line)
    assert trained_line.split("│")[1].strip() == "1" and "1.00 ± 0.00" in trained_line  # ranked first, solved
    behaviour = lines[next(i for i, line in enumerate(lines) if "behaviour (agentmill eval)" in line) :]
    header = next(line for line in behaviour if "base" in line)
    assert header.index("base") < header.index("trained")  # one column per checkpoint
    premature = next(line for line in behaviour if "premature" in line)
    assert [c.strip() for c in premature.split("│")[1:-1]] == ["premature", "4", "0"]


def test_a_rerun_resumes_and_a_changed_checkpoint_is_refused(tmp_path):
    eval_dir = tmp_path / "eval"
    args = ["--sample", "--task", TASKS[0], "--out", str(eval_dir), "--label", "ckpt", "--base-url"]
    with ChatServer(give_up, model="ckpt") as server:
        agentmill("eval", *args, server.base_url, "--model", "ckpt")
        asked = len(server.requests)
        agentmill("eval", *args, server.base_url, "--model", "ckpt")  # finished trials are not run again
        assert len(server.requests) == asked
        r = agentmill("eval", *args, server.base_url, "--model", "other-ckpt", ok=False)
    assert r.returncode == 2 and "model: 'ckpt' -> 'other-ckpt'" in r.stderr  # one label is one checkpoint
    r = agentmill("eval", "--sample", "--out", str(eval_dir), "--label", "x", "--model", "m", ok=False)
    assert r.returncode == 2 and "--base-url" in r.stderr
    r = agentmill("eval", "--sample", "--out", str(eval_dir), "--label", "x", "--temperature", "-1", ok=False)
    assert r.returncode == 2 and "invalid option: temperature: Input should be greater than or equal to 0" in r.stderr


def test_a_broken_results_file_is_named(tmp_path):
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    (eval_dir / "results.json").write_text("{}")
    (eval_dir / "telemetry.json").write_text("[1, 2]")
    r = agentmill("table", str(eval_dir / "results.json"), ok=False)
    assert r.returncode == 2 and "telemetry.json: cannot merge into it: expected a JSON object" in r.stderr
