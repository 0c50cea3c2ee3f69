"""`agentmill import harbor`: Harbor job folders (written as Harbor lays them out) -> agentmill runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.interop.harbor.job_import import import_harbor_job
from agentmill.rollout.status import summarize
from agentmill.traces.records import iter_traces
from tests.interop.harbor_job import atif, write_job, write_trial

CLI = [sys.executable, "-m", "agentmill.cli"]

# (folder, task, exception type, rewards) -> the outcome agentmill must give it
CASES = [
    ("alpha__aaaaaaa", "alpha", None, {"reward": 1.0}, "passed"),
    ("alpha__bbbbbbb", "alpha", None, {"reward": 0.0}, "failed"),
    ("beta__ccccccc", "beta", "AgentTimeoutError", {"reward": 0.0}, "agent_timeout"),
    ("beta__ddddddd", "beta", "VerifierTimeoutError", None, "verifier_timeout"),
    ("gamma__eeeeeee", "gamma", "RewardFileNotFoundError", None, "verifier_error"),
    ("gamma__fffffff", "gamma", "ContextLengthExceededError", {"reward": 0.0}, "context_exceeded"),
    ("delta__ggggggg", "delta", "DockerComposeError", None, "sandbox_error"),
    ("delta__hhhhhhh", "delta", "RateLimitError", None, "infra_error"),
    ("eps__iiiiiii", "eps", "ValueError", None, "agent_error"),
    ("eps__jjjjjjj", "eps", None, {"quality": 1.0, "style": 0.5}, "failed"),  # reward.json: the mean of its values
]


def _job(tmp_path: Path) -> Path:
    return write_job(tmp_path / "jobs", [dict(name=n, task=t, exception=e, rewards=r) for n, t, e, r, _ in CASES])


def _by_folder(run: Path) -> dict[str, dict]:
    out = {}
    for rec in iter_traces(run):
        out[rec.trial["imported_from"]["trial_name"]] = {"outcome": rec.outcome, "reward": rec.reward, "rec": rec}
    return out


def test_every_trial_is_imported_with_its_typed_outcome_and_reward(tmp_path):
    run = tmp_path / "run"
    calls = []
    report = import_harbor_job(_job(tmp_path), run, progress=lambda done, total: calls.append((done, total)))
    assert report.problems == [] and report.imported == len(CASES)
    assert calls == [(i, len(CASES)) for i in range(1, len(CASES) + 1)]
    got = _by_folder(run)
    for name, _, _, rewards, outcome in CASES:
        assert got[name]["outcome"] == outcome, name
        if rewards is None:
            assert got[name]["reward"] is None
        else:
            assert got[name]["reward"] == pytest.approx(rewards.get("reward", sum(rewards.values()) / len(rewards)))
    s = summarize(run)
    assert s["done"] == len(CASES) and s["outcomes"]["failed"] == 2 and s["infra_failures"] == 2
    assert s["wall_seconds"] == pytest.approx(40.0)  # Harbor's own start and finish, not the import's


def test_imported_trials_keep_trajectory_tokens_timings_and_verifier_output(tmp_path):
    run = tmp_path / "run"
    import_harbor_job(_job(tmp_path), run)
    rec = _by_folder(run)["alpha__aaaaaaa"]["rec"]
    assert [s.source for s in rec.trajectory.steps] == ["system", "user", "agent", "agent"]
    assert rec.trajectory.steps[2].tool_calls[0].arguments == {"keystrokes": "echo 0\n"}
    assert rec.trajectory.steps[3].observation.results[0].content == "$ echo 1\n1\n"
    assert rec.result["tokens"] == {"prompt": 201, "completion": 40} and rec.result["cost_usd"] == 0.0012
    assert rec.result["timings"]["agent"] == pytest.approx(23.0) and rec.result["timings"]["total"] == pytest.approx(
        40.0
    )
    assert rec.result["verifier_stdout"] == "tests ran\n"
    assert (
        rec.trial["model"] == "openai/teacher"
        and rec.trial["agent"] == "terminus-2"
        and rec.trial["instruction"] == "Solve alpha."
    )
    assert rec.telemetry.assistant_turns == 2 and rec.telemetry.commands == 2 and rec.telemetry.reasoning_steps == 2
    assert rec.telemetry.completion_claimed and not rec.telemetry.premature_completion  # the last reply: task_complete
    assert _by_folder(run)["alpha__bbbbbbb"]["rec"].telemetry.premature_completion  # claimed, but failed
    timeout = _by_folder(run)["beta__ccccccc"]["rec"]
    assert timeout.result["exception"] == "AgentTimeoutError: AgentTimeoutError happened"


def test_attempts_count_up_per_task_by_start_time(tmp_path):
    job = write_job(tmp_path / "jobs", [])
    for name, started in (
        ("t__later00", "2026-05-01T10:00:09"),
        ("t__first00", "2026-05-01T10:00:01"),
        ("t__middle0", "2026-05-01T10:00:05"),
    ):
        write_trial(job, task="t", name=name, reward=1.0, started=started)
    import_harbor_job(job, tmp_path / "run")
    attempts = {k: v["rec"].trial["attempt"] for k, v in _by_folder(tmp_path / "run").items()}
    assert attempts == {"t__first00": 0, "t__middle0": 1, "t__later00": 2}
    s = summarize(tmp_path / "run")
    assert set(s["pass_at_k"]) == {"1", "2", "3"}


def test_status_export_and_report_work_on_an_imported_job(tmp_path):
    run = tmp_path / "run"
    r = subprocess.run(
        [*CLI, "import", "harbor", str(_job(tmp_path)), "--out", str(run)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert f"imported {len(CASES)} trials" in r.stderr
    st = subprocess.run([*CLI, "status", str(run), "--json"], capture_output=True, text=True, timeout=120)
    assert json.loads(st.stdout)["outcomes"]["passed"] == 1
    out = tmp_path / "rows.jsonl"
    ex = subprocess.run(
        [*CLI, "export", str(run), "--format", "trl", "--out", str(out), "--min-turns", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ex.returncode == 0, ex.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # default trace filters: errors (timeouts of the verifier, sandbox, infra, agent, verifier) dropped; the rest kept
    assert len(rows) == 5 and all(row["messages"][-1]["role"] == "assistant" for row in rows)
    rep = subprocess.run(
        [*CLI, "report", str(run), "--out", str(tmp_path / "r.html")], capture_output=True, text=True, timeout=120
    )
    assert rep.returncode == 0, rep.stderr
    assert "Trajectories" in (tmp_path / "r.html").read_text()


def test_a_malformed_trial_folder_is_reported_and_skipped_not_fatal(tmp_path):
    job = _job(tmp_path)
    (job / "bad-json__0000001").mkdir()
    (job / "bad-json__0000001" / "result.json").write_text("{not json")
    broken = write_trial(job, task="zeta", name="no-task-name__0000002", reward=1.0)
    data = json.loads((broken / "result.json").read_text())
    del data["task_name"]
    (broken / "result.json").write_text(json.dumps(data))
    bad_traj = atif("eta")
    bad_traj["steps"][1]["source"] = "robot"
    write_trial(job, task="eta", name="bad-trajectory__0000003", reward=1.0, trajectory=bad_traj)
    (job / "running__0000004" / "agent").mkdir(parents=True)  # a trial still running: no result.json yet
    run = tmp_path / "run"
    report = import_harbor_job(job, run)
    assert report.imported == len(CASES)
    problems = "\n".join(report.problems)
    assert len(report.problems) == 4
    assert "bad-json__0000001: result.json: not JSON" in problems
    assert "no-task-name__0000002: result.json: task_name: Field required" in problems
    assert "bad-trajectory__0000003: agent/trajectory.json: steps.1.source" in problems
    assert "running__0000004: no result.json" in problems
    r = subprocess.run(
        [*CLI, "import", "harbor", str(job), "--out", str(tmp_path / "run2")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and r.stderr.count("skipped:") == 4 and f"imported {len(CASES)} trials" in r.stderr


def test_a_trial_without_a_trajectory_is_imported_with_an_empty_one_said_so(tmp_path):
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0, trajectory=None)])
    import_harbor_job(job, tmp_path / "run")
    rec = next(iter(_by_folder(tmp_path / "run").values()))["rec"]
    assert rec.trajectory.steps == [] and "no agent/trajectory.json" in rec.trajectory.notes and rec.outcome == "passed"


def test_reimport_adds_only_new_trials_and_another_folder_is_refused(tmp_path):
    job = _job(tmp_path)
    run = tmp_path / "run"
    import_harbor_job(job, run)
    write_trial(job, task="alpha", name="alpha__zzzzzzz", reward=1.0, started="2026-05-01T11:00:00")
    again = import_harbor_job(job, run)
    assert (again.imported, again.already) == (1, len(CASES))
    assert summarize(run)["done"] == len(CASES) + 1
    other = write_job(tmp_path / "other", [dict(task="a", name="a__0000001", reward=1.0)])
    with pytest.raises(AgentmillError, match="not an import of"):
        import_harbor_job(other, run)


def test_not_a_job_folder_is_one_clear_error(tmp_path):
    with pytest.raises(AgentmillError, match="no such folder"):
        import_harbor_job(tmp_path / "missing", tmp_path / "run")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AgentmillError, match="not a Harbor job folder"):
        import_harbor_job(tmp_path / "empty", tmp_path / "run")


# ---------------------------------------------------------------- hostile job folders


def test_links_and_special_files_in_a_job_are_never_followed(tmp_path):
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0, trajectory=None)])
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(atif("stolen")))
    os.symlink(secret, job / "a__0000001" / "agent" / "trajectory.json")
    (job / "a__0000001" / "verifier" / "test-stdout.txt").unlink()
    os.symlink("/etc/passwd", job / "a__0000001" / "verifier" / "test-stdout.txt")
    b = write_trial(job, task="b", name="b__0000002", reward=1.0)
    (b / "result.json").rename(b / "real.json")
    os.symlink(b / "real.json", b / "result.json")
    os.symlink(job / "a__0000001", job / "linked__0000003")  # a linked trial folder is not a trial of this job
    os.mkfifo(job / "c__fifo")
    report = import_harbor_job(job, tmp_path / "run")
    problems = "\n".join(report.problems)
    assert report.imported == 0
    assert "a__0000001: trajectory.json: not a regular file" in problems
    assert "b__0000002: result.json: not a regular file" in problems
    assert "linked__0000003" not in problems and "stolen" not in (tmp_path / "run").rglob("*").__str__()


def test_a_planted_trial_id_cannot_steer_where_files_are_written(tmp_path):
    meta = {"agentmill": {"trial_id": "../../escaped", "outcome": "passed"}}
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0, metadata=meta)])
    report = import_harbor_job(job, tmp_path / "deep" / "run")
    assert report.imported == 0 and "metadata.agentmill.trial_id is not a trial id" in report.problems[0]
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "deep" / "escaped").exists()


def test_planted_agentmill_records_that_do_not_validate_are_reported(tmp_path):
    meta = {"agentmill": {"trial_id": "abc123", "outcome": "hacked", "tamper": []}}
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0, metadata=meta)])
    report = import_harbor_job(job, tmp_path / "run")
    assert report.imported == 0 and "outcome" in report.problems[0]


def test_a_reward_file_is_read_when_result_json_has_no_verifier_result(tmp_path):
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=None)])
    (job / "a__0000001" / "verifier" / "reward.txt").write_text("1\n")
    import_harbor_job(job, tmp_path / "run")
    got = next(iter(_by_folder(tmp_path / "run").values()))
    assert (got["outcome"], got["reward"]) == ("passed", 1.0)


def test_harbor_terminus_trajectories_export_as_the_conversation_the_model_had(tmp_path):
    """Terminus-2 speaks JSON in its reply and reads the terminal as the next user turn: the SFT row says so."""
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0)])
    import_harbor_job(job, tmp_path / "run")
    from agentmill.traces.render import render

    rec = next(iter(iter_traces(tmp_path / "run")))
    messages = render(rec.trajectory, reasoning="drop").messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert not any("tool_calls" in m for m in messages)
    assert messages[3]["content"] == "$ echo 0\n0\n" and json.loads(messages[2]["content"])["analysis"] == "turn 0"


def test_an_import_is_refused_while_another_process_writes_the_folder(tmp_path):
    from agentmill.rollout.lock import RunLock, RunLockedError

    job = _job(tmp_path)
    run = tmp_path / "run"
    import_harbor_job(job, run)
    with RunLock(run):
        with pytest.raises(RunLockedError):
            import_harbor_job(job, run)
    assert import_harbor_job(job, run).already == len(CASES)


def test_oversized_files_are_refused_not_read(tmp_path, monkeypatch):
    from agentmill.interop import foreign_files

    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0)])
    monkeypatch.setattr(foreign_files, "MAX_FILE_BYTES", 200)  # result.json and trajectory.json are larger
    report = import_harbor_job(job, tmp_path / "run")
    assert (
        report.imported == 0
        and "result.json: " in report.problems[0]
        and "over the 200 byte limit" in report.problems[0]
    )


def test_a_job_cannot_point_readers_at_folders_that_are_not_tasks(tmp_path):
    """The viewer lists a trial's task folder: an imported trial names one only if it is a task folder here."""
    from agentmill.tasks import sample_dataset_path

    real_task = sample_dataset_path() / "dedupe-photos"
    job = write_job(
        tmp_path / "jobs",
        [dict(task="a", name="a__0000001", reward=1.0), dict(task="b", name="b__0000002", reward=1.0)],
    )
    for name, path in (("a__0000001", "/etc"), ("b__0000002", str(real_task))):
        data = json.loads((job / name / "result.json").read_text())
        data["task_id"] = {"path": path}
        (job / name / "result.json").write_text(json.dumps(data))
    import_harbor_job(job, tmp_path / "run")
    got = {r.trial["task"]: r.trial for r in iter_traces(tmp_path / "run")}
    assert got["a"]["task_path"] is None and got["a"]["imported_from"]["task_path"] == "/etc"
    assert got["b"]["task_path"] == str(real_task)
