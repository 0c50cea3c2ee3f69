"""Harbor's job-folder records field by field (Harbor 0.26): what `export --format harbor-job` writes reads
as Harbor's models (a re-declared double, harbor_models.py), the job's counters and stats follow Harbor's
rules, a Harbor job comes back through import and export with its stats, and export -> import -> export
writes the same job again. The importer takes the fields Harbor added: counters, locks, step results,
ATIF documents without a session id."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from agentmill.interop.harbor.job_import import import_harbor_job
from agentmill.traces.atif import AgentInfo, Trajectory
from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
from agentmill.traces.records import iter_traces
from tests.interop.harbor_job import atif, write_job
from tests.interop.harbor_models import validate_job_folder
from tests.traces.builders import terminus_trajectory
from tests.traces.builders import write_trial as write_run_trial

CLI = [sys.executable, "-m", "agentmill.cli"]
KEEP_ALL = FilterSpec().merged(min_turns=0, drop_outcomes=[])
OUTCOMES = {
    "agent_timeout": 0.0,
    "verifier_error": None,
    "verifier_timeout": None,
    "sandbox_error": None,
    "infra_error": None,
    "context_exceeded": 0.0,
    "agent_error": None,
    "task_error": None,
    "failed": 0.0,
    "passed": 1.0,
}


def _run_of_every_outcome(run: Path) -> Path:
    for i, (outcome, reward) in enumerate(OUTCOMES.items()):
        write_run_trial(
            run,
            f"{i:x}{'c' * 23}",
            terminus_trajectory([("ls\n", "a b\n")] * 2),
            outcome=outcome,
            reward=reward,
            task=f"task-{i}",
            task_hash=f"{i:064x}",
        )
    empty = Trajectory(session_id="s-empty", agent=AgentInfo(name="terminus", version="1"))  # an agent that never spoke
    write_run_trial(run, "e" * 24, empty, outcome="sandbox_error", reward=None, task="task-empty")
    for folder in (run / "trials").iterdir():  # the records a rollout writes in full (the builder leaves defaults out)
        trial, result = _json(folder / "trial.json"), _json(folder / "result.json")
        (folder / "trial.json").write_text(json.dumps({"task_path": None, "task_metadata": {}, **trial}))
        (folder / "result.json").write_text(
            json.dumps(
                {
                    "tokens": {"prompt": 0, "completion": 0},
                    "cost_usd": None,
                    "timings": dict.fromkeys(("environment", "sandbox_start", "agent", "verifier", "total"), 0.0),
                    **result,
                }
            )
        )
    return run


def _json(path: Path):
    return json.loads(path.read_text())


# ---------------------------------------------------------------- what agentmill writes, read as Harbor reads it


def test_every_record_of_an_exported_job_reads_as_harbors_models(tmp_path):
    job = tmp_path / "job"
    export_run(_run_of_every_outcome(tmp_path / "run"), "harbor-job", job, spec=KEEP_ALL)
    trials = sorted(p for p in job.iterdir() if p.is_dir())
    assert len(trials) == len(OUTCOMES) + 1
    # 3 job files; per trial config, result, lock, and a trajectory except the one of no step (ATIF needs one)
    assert validate_job_folder(job) == 3 + 4 * len(trials) - 1
    assert not (job / "task-empty__eeeeeee" / "agent" / "trajectory.json").exists()
    lock = _json(job / "lock.json")
    assert lock["trials"] == [_json(t / "lock.json") for t in trials]  # the job's lock lists each trial's lock
    assert _json(job / "task-3__3cccccc" / "lock.json")["task"]["digest"] == f"sha256:{3:064x}"  # agentmill's task hash
    assert not list(job.glob(".*"))  # no side file left behind
    result = _json(job / "task-0__0cccccc" / "result.json")
    assert result["exception_info"]["policy"] == {"should_retry": False, "should_grade": True, "has_valid_reward": True}
    assert result["reward_valid"] is True and result["verifier_environment_mode"] == "separate"
    assert result["agent_info"]["model_info"] == {"name": "teacher-x", "provider": None}
    config = _json(job / "config.json")
    assert "orchestrator" not in config and config["n_concurrent_trials"] == 4  # Harbor dropped `orchestrator`
    assert config["environment"]["type"] is None and config["environment"]["import_path"].startswith("agentmill.")


@pytest.mark.parametrize(
    "where, change, error",
    [
        (
            "config.json",
            lambda d: d["datasets"].append({"path": "/data/x", "name": "x"}),
            "not both",
        ),  # what the old exporter wrote
        ("config.json", lambda d: d["environment"].update(type="bubblewrap"), "environment.type"),
        ("config.json", lambda d: d.update(orchestrator={"type": "local"}), "orchestrator"),
        ("result.json", lambda d: d["stats"].update(n_trials=3), "n_trials"),
        ("lock.json", lambda d: d["trials"][0]["task"].update(digest="abc"), "sha256"),
        ("task-0__0cccccc/result.json", lambda d: d["exception_info"].pop("occurred_at"), "occurred_at"),
        ("task-0__0cccccc/config.json", lambda d: d["agent"].update(env_vars={}), "env_vars"),
        (
            "task-0__0cccccc/agent/trajectory.json",
            lambda d: d["steps"][0].update(model_name="m"),
            "only on agent steps",
        ),
        ("task-0__0cccccc/agent/trajectory.json", lambda d: d["steps"][2].update(step_id=7), "expected 3"),
    ],
)
def test_the_double_refuses_what_harbor_would_refuse(tmp_path, where, change, error):
    """The gate can fail: each planted defect (the first is what this exporter wrote before) is refused."""
    job = tmp_path / "job"
    export_run(_run_of_every_outcome(tmp_path / "run"), "harbor-job", job, spec=KEEP_ALL)
    doc = _json(job / where)
    change(doc)
    (job / where).write_text(json.dumps(doc))
    with pytest.raises((ValueError, AssertionError), match=error):
        validate_job_folder(job)


def test_the_harbor_shaped_fixtures_read_as_harbors_models(tmp_path):
    trials = [
        dict(task="a", name="a__0000001", reward=1.0),
        dict(task="b", name="b__0000002", reward=0.0, exception="AgentTimeoutError"),
        dict(task="c", name="c__0000003", exception="RateLimitError", trajectory=None),
    ]
    job = write_job(tmp_path / "jobs", [{**t, "future_field": False} for t in trials])
    assert validate_job_folder(job) == 3 + 4 + 4 + 3


# ---------------------------------------------------------------- the job's counters and stats


def test_the_jobs_stats_follow_harbors_rules(tmp_path):
    """Two tasks, two attempts each, plus one trial without a reward: counted by hand from Harbor's rules."""
    run = tmp_path / "run"
    cases = [
        ("alpha", "passed", 1.0),
        ("alpha", "failed", 0.0),
        ("beta", "agent_timeout", 0.0),
        ("beta", "failed", 0.0),
        ("gamma", "infra_error", None),
    ]
    for i, (task, outcome, reward) in enumerate(cases):
        write_run_trial(
            run, f"{i}{'d' * 23}", terminus_trajectory([("ls\n", "x\n")] * 2), outcome=outcome, reward=reward, task=task
        )
    export_run(run, "harbor-job", tmp_path / "job", spec=KEEP_ALL)
    stats = _json(tmp_path / "job" / "result.json")["stats"]
    assert {k: v for k, v in stats.items() if k != "evals"} == {
        "n_completed_trials": 5,
        "n_errored_trials": 2,
        "n_running_trials": 0,
        "n_pending_trials": 0,
        "n_cancelled_trials": 0,
        "n_retries": 0,
        "n_input_tokens": 0,
        "n_cache_tokens": 0,
        "n_output_tokens": 0,
        "cost_usd": None,
    }
    ((key, ev),) = stats["evals"].items()
    assert key == "terminus__teacher-x__src-a"
    assert ev["n_trials"] == 4 and ev["n_errors"] == 2  # the timeout's reward counts; the infra error has none
    assert ev["metrics"] == [{"mean": 0.25}]  # over the four valid rewards, not over five
    assert ev["pass_at_k"] == {"2": 0.5}  # alpha: 1 of 2 passed -> pass@2 = 1; beta: 0
    assert ev["reward_stats"] == {
        "reward": {"1.0": ["alpha__0dddddd"], "0.0": ["alpha__1dddddd", "beta__2dddddd", "beta__3dddddd"]}
    }
    assert ev["exception_stats"] == {"AgentTimeoutError": ["beta__2dddddd"], "APIConnectionError": ["gamma__4dddddd"]}


def test_a_harbor_job_imported_and_exported_keeps_its_stats_names_and_environment(tmp_path):
    """Harbor's own stats (written by hand, as Harbor 0.26 counts them) come back from the re-exported job."""
    trials = [
        dict(task="alpha", name="alpha__aaaaaaa", reward=1.0),
        dict(task="alpha", name="alpha__bbbbbbb", reward=0.0),
        dict(task="beta", name="beta__ccccccc", reward=0.0, exception="AgentTimeoutError"),
        dict(task="beta", name="beta__ddddddd", reward=0.0),
        dict(task="gamma", name="gamma__eeeeeee", exception="RateLimitError"),
        dict(task="gamma", name="gamma__fffffff", exception="VerifierTimeoutError"),
        dict(task="delta", name="delta__ggggggg", exception="CancelledError"),
    ]
    harbor_stats = {
        "n_completed_trials": 7,
        "n_errored_trials": 4,
        "n_running_trials": 0,
        "n_pending_trials": 0,
        "n_cancelled_trials": 1,
        "n_retries": 0,
        "evals": {
            "terminus-2__teacher__demo": {
                "n_trials": 4,
                "n_errors": 4,
                "metrics": [{"mean": 0.25}],
                "pass_at_k": {"2": 0.5},
                "reward_stats": {
                    "reward": {"1.0": ["alpha__aaaaaaa"], "0.0": ["alpha__bbbbbbb", "beta__ccccccc", "beta__ddddddd"]}
                },
                "exception_stats": {
                    "AgentTimeoutError": ["beta__ccccccc"],
                    "RateLimitError": ["gamma__eeeeeee"],
                    "VerifierTimeoutError": ["gamma__fffffff"],
                    "CancelledError": ["delta__ggggggg"],
                },
            }
        },
        "n_input_tokens": 7 * 201,
        "n_cache_tokens": 7 * 20,
        "n_output_tokens": 7 * 40,
        "cost_usd": 7 * 0.0012,
    }
    job = write_job(tmp_path / "jobs", trials, stats=harbor_stats)
    assert import_harbor_job(job, tmp_path / "run").problems == []
    export_run(tmp_path / "run", "harbor-job", tmp_path / "again", spec=KEEP_ALL)
    again = tmp_path / "again"
    validate_job_folder(again)
    stats = _json(again / "result.json")["stats"]
    assert stats.pop("cost_usd") == pytest.approx(harbor_stats.pop("cost_usd"))
    assert _sorted_names(stats) == _sorted_names(harbor_stats)  # trials are listed in the order they finished
    for t in trials:
        before, after = _json(job / t["name"] / "result.json"), _json(again / t["name"] / "result.json")
        for field in (
            "task_name",
            "source",
            "agent_info",
            "verifier_result",
            "reward_valid",
            "verifier_environment_mode",
        ):
            assert after[field] == before[field], (t["name"], field)
        for field in ("started_at", "finished_at"):  # the same moments (Harbor writes local time without a zone)
            assert _moment(after[field]) == _moment(before[field]), (t["name"], field)
        assert (after["exception_info"] or {}).get("exception_type") == (before["exception_info"] or {}).get(
            "exception_type"
        )
        for field in ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd"):
            assert after["agent_result"][field] == before["agent_result"][field]
        assert (
            after["config"]["environment"] == before["config"]["environment"]
        )  # Harbor ran it in docker, not agentmill
    assert _json(again / "config.json")["environment"]["type"] == "docker"


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def _sorted_names(stats: dict) -> dict:
    for ev in stats["evals"].values():
        ev["reward_stats"] = {k: {v: sorted(names) for v, names in by.items()} for k, by in ev["reward_stats"].items()}
        ev["exception_stats"] = {k: sorted(names) for k, names in ev["exception_stats"].items()}
    return stats


def _normalized(job: Path) -> dict[str, object]:
    """Every file of a job folder, less what names the export itself (its id, folder and time: the time of the
    export stands for when a trial that left no timestamp raised)."""
    job_id, when = _json(job / "result.json")["id"], _json(job / "lock.json")["created_at"]
    out = {}
    for path in sorted(p for p in job.rglob("*") if p.is_file()):
        text = (
            path.read_text()
            .replace(job_id, "JOB")
            .replace(when, "WHEN")
            .replace(str(job.resolve()), "DIR")
            .replace(str(job), "DIR")
        )
        text = text.replace(job.resolve().as_uri(), "URI").replace(job.name, "NAME").replace(str(job.parent), "PARENT")
        doc = json.loads(text) if path.suffix == ".json" else text
        if path.name == "result.json" and path.parent != job:
            doc["id"] = "TRIAL"  # derived from the job's id
        out[str(path.relative_to(job))] = doc
    return out


def test_export_import_export_writes_the_same_job(tmp_path):
    run = _run_of_every_outcome(tmp_path / "run")
    first, second = tmp_path / "a" / "job", tmp_path / "b" / "job"
    export_run(run, "harbor-job", first, spec=KEEP_ALL)
    assert import_harbor_job(first, tmp_path / "back").problems == []
    export_run(tmp_path / "back", "harbor-job", second, spec=KEEP_ALL)
    a, b = _normalized(first), _normalized(second)
    assert set(a) == set(b) and len(a) > 40
    for name in a:
        assert b[name] == a[name], name


# ---------------------------------------------------------------- what the importer takes from newer Harbor jobs


def test_the_jobs_counters_are_read_in_current_and_older_names(tmp_path):
    job = write_job(
        tmp_path / "new",
        [
            dict(task="a", name="a__0000001", reward=1.0),
            dict(task="b", name="b__0000002", exception="AgentTimeoutError", reward=0.0),
        ],
    )
    report = import_harbor_job(job, tmp_path / "run-new")
    assert (report.job_stats["n_completed_trials"], report.job_stats["n_errored_trials"]) == (2, 1)
    old = write_job(tmp_path / "old", [dict(task="a", name="a__0000001", reward=1.0)], legacy_stats=True)
    report = import_harbor_job(old, tmp_path / "run-old")
    assert report.problems == [] and report.job_stats["n_completed_trials"] == 1


def test_an_unfinished_job_is_said_so_and_a_broken_job_result_is_reported(tmp_path):
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0)])
    result = _json(job / "result.json")
    result["n_total_trials"], result["stats"]["n_running_trials"], result["stats"]["n_pending_trials"] = 5, 1, 3
    (job / "result.json").write_text(json.dumps(result))
    r = subprocess.run(
        [*CLI, "import", "harbor", str(job), "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "not finished (1 trials running, 3 pending" in r.stderr, r.stderr
    result["id"] = 12  # not a job id
    (job / "result.json").write_text(json.dumps(result))
    report = import_harbor_job(job, tmp_path / "run2")
    assert report.imported == 1 and len(report.problems) == 1 and "result.json: id:" in report.problems[0]


def test_a_multi_step_trial_gives_its_steps_tokens_and_failure(tmp_path):
    steps = [
        {"step_name": "one", "agent_result": {"n_input_tokens": 100, "n_output_tokens": 10, "cost_usd": 0.5}},
        {
            "step_name": "two",
            "agent_result": {"n_input_tokens": 50, "n_output_tokens": 5, "cost_usd": 0.25},
            "exception_info": {
                "exception_type": "AgentTimeoutError",
                "exception_message": "slow",
                "exception_traceback": "",
                "occurred_at": "2026-05-01T10:00:20",
            },
        },
    ]
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=0.0, steps=steps)])
    import_harbor_job(job, tmp_path / "run")
    rec = next(iter(iter_traces(tmp_path / "run")))
    assert rec.outcome == "agent_timeout" and rec.result["exception"] == "AgentTimeoutError: slow"
    assert rec.result["tokens"] == {"prompt": 150, "completion": 15} and rec.result["cost_usd"] == 0.75


def test_the_task_digest_of_a_trial_lock_stands_in_for_a_missing_checksum(tmp_path):
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0)])
    result = _json(job / "a__0000001" / "result.json")
    result["task_checksum"] = ""  # Harbor means to retire task_checksum for the lock's digest
    (job / "a__0000001" / "result.json").write_text(json.dumps(result))
    import_harbor_job(job, tmp_path / "run")
    digest = _json(job / "a__0000001" / "lock.json")["task"]["digest"]
    assert next(iter(iter_traces(tmp_path / "run"))).trial["task_hash"] == digest.removeprefix("sha256:")


def test_a_broken_trial_lock_is_reported_and_the_trial_skipped(tmp_path):
    job = write_job(
        tmp_path / "jobs",
        [dict(task="a", name="a__0000001", reward=1.0), dict(task="b", name="b__0000002", reward=1.0)],
    )
    (job / "b__0000002" / "lock.json").write_text(json.dumps({"task": "not an object"}))
    report = import_harbor_job(job, tmp_path / "run")
    assert report.imported == 1 and report.problems == [
        f"{job / 'b__0000002'}: lock.json: task: Input should be an object"
    ]


def test_a_lock_or_job_result_that_is_a_link_or_a_bad_digest_is_reported_not_read(tmp_path):
    job = write_job(
        tmp_path / "jobs",
        [
            dict(task="a", name="a__0000001", reward=1.0),
            dict(task="b", name="b__0000002", reward=1.0),
            dict(task="c", name="c__0000003", reward=1.0),
        ],
    )
    (job / "a__0000001" / "lock.json").unlink()
    os.symlink("/etc/passwd", job / "a__0000001" / "lock.json")
    lock = _json(job / "b__0000002" / "lock.json")
    lock["task"]["digest"] = "sha256:../../etc"
    (job / "b__0000002" / "lock.json").write_text(json.dumps(lock))
    (job / "result.json").rename(job / "real-result.json")
    os.symlink(job / "real-result.json", job / "result.json")
    report = import_harbor_job(job, tmp_path / "run")
    problems = "\n".join(report.problems)
    assert report.imported == 1 and len(report.problems) == 3, problems
    assert (
        "a__0000001: lock.json: not a regular file" in problems
        and "b__0000002: lock.json: task.digest: String should match" in problems
    )
    assert f"{job / 'result.json'}: result.json: not a regular file" in problems


def test_an_atif_document_without_session_id_or_timestamps_round_trips(tmp_path):
    """ATIF-v1.7 made session_id optional, and a step's timestamp always was: nothing is invented on the way back."""
    doc = atif("a")
    doc["schema_version"] = "ATIF-v1.8"
    del doc["session_id"]
    for step in doc["steps"]:
        del step["timestamp"]
    doc["steps"][2]["llm_call_count"] = 1  # an ATIF-v1.7 field agentmill does not model
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", reward=1.0, trajectory=doc)])
    import_harbor_job(job, tmp_path / "run")
    assert next(iter(iter_traces(tmp_path / "run"))).trajectory.session_id == "a__0000001"
    export_run(tmp_path / "run", "harbor-job", tmp_path / "again", spec=KEEP_ALL)
    assert _json(tmp_path / "again" / "a__0000001" / "agent" / "trajectory.json") == doc


def test_exception_types_harbor_recorded_survive_import_and_export(tmp_path):
    job = write_job(tmp_path / "jobs", [dict(task="a", name="a__0000001", exception="DockerComposeError")])
    import_harbor_job(job, tmp_path / "run")
    assert next(iter(iter_traces(tmp_path / "run"))).outcome == "sandbox_error"
    export_run(tmp_path / "run", "harbor-job", tmp_path / "again", spec=KEEP_ALL)
    exc = _json(tmp_path / "again" / "a__0000001" / "result.json")["exception_info"]
    assert (exc["exception_type"], exc["exception_message"]) == ("DockerComposeError", "DockerComposeError happened")


def test_two_trials_that_would_share_a_folder_get_two(tmp_path):
    run = tmp_path / "run"
    for tid in ("abcdef0" + "1" * 17, "abcdef0" + "2" * 17):  # same task, same first 7 characters
        write_run_trial(run, tid, terminus_trajectory([("ls\n", "x\n")]), outcome="passed", reward=1.0, task="same")
    export_run(run, "harbor-job", tmp_path / "job", spec=KEEP_ALL)
    names = sorted(p.name for p in (tmp_path / "job").iterdir() if p.is_dir())
    assert len(names) == 2 and all(re.fullmatch(r"same__abcdef0\w*", n) for n in names)
