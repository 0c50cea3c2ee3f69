"""Round trips: a real agentmill rollout -> `export --format harbor-job` -> `import harbor` gives the same
run; a Harbor job -> import -> export gives Harbor's files back."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.interop.harbor.config import SANDBOX_IMPORT_PATH, agent_config
from agentmill.interop.harbor.job_import import import_harbor_job
from agentmill.interop.harbor.schema import TrialResult as HarborTrial
from agentmill.rollout.status import summarize
from agentmill.tasks import sample_dataset_path
from agentmill.traces.atif import AgentInfo, Step, Trajectory
from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
from agentmill.traces.records import iter_traces
from tests.conftest import sandbox
from tests.interop.harbor_job import atif, write_job
from tests.interop.harbor_models import validate_job_folder
from tests.traces.builders import terminus_trajectory, write_trial

CLI = [sys.executable, "-m", "agentmill.cli"]
TASKS = ["csv-revenue-by-region", "dedupe-photos", "errors-per-hour"]
KEEP_ALL = FilterSpec().merged(min_turns=0, drop_outcomes=[])


def _rollout(out: Path, agent: str, attempts: int) -> Path:
    cmd = [*CLI, "rollout", "--sample", "--agent", agent, "--out", str(out), "--attempts", str(attempts), "-c", "2"]
    for t in TASKS:
        cmd += ["--task", t]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {"oracle": _rollout(root / "oracle", "oracle", 2), "nop": _rollout(root / "nop", "nop", 1)}


def _records(run: Path) -> dict[str, object]:
    return {r.trial_id: r for r in iter_traces(run)}


def _strip_agentmill_records(job: Path) -> None:
    for result in job.glob("*/result.json"):
        data = json.loads(result.read_text())
        data["agent_result"]["metadata"] = None
        result.write_text(json.dumps(data))


def _same_trials(original: Path, imported: Path, *, by_session: bool = False) -> None:
    a, b = _records(original), _records(imported)
    key = (lambda r: r.trajectory.session_id) if by_session else (lambda r: r.trial_id)
    a, b = {key(r): r for r in a.values()}, {key(r): r for r in b.values()}
    assert set(a) == set(b) and a
    for k in a:
        assert (b[k].outcome, b[k].reward, b[k].result["rewards"]) == (
            a[k].outcome,
            a[k].reward,
            a[k].result["rewards"],
        ), k
        assert b[k].trajectory.model_dump() == a[k].trajectory.model_dump(), k
        assert b[k].result["verifier_stdout"] == a[k].result["verifier_stdout"]


@sandbox
@pytest.mark.parametrize("agent", ["oracle", "nop"])
def test_a_real_rollout_exported_to_harbor_and_imported_back_is_the_same_run(runs, tmp_path, agent):
    run = runs[agent]
    job = tmp_path / "job"
    r = subprocess.run(
        [
            *CLI,
            "export",
            str(run),
            "--format",
            "harbor-job",
            "--out",
            str(job),
            "--keep-all-outcomes",
            "--min-turns",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    back = tmp_path / "back"
    r = subprocess.run(
        [*CLI, "import", "harbor", str(job), "--out", str(back)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    _same_trials(run, back)
    validate_job_folder(job)  # every record of a real rollout's job reads as Harbor's models
    a, b = _records(run), _records(back)
    for tid in a:  # every agentmill record comes back, plus where it came from
        assert {k: v for k, v in b[tid].trial.items() if k != "imported_from"} == a[tid].trial
        assert {k: v for k, v in b[tid].result.items() if k != "notes"} == {
            k: v for k, v in a[tid].result.items() if k != "notes"
        }
    s1, s2 = summarize(run), summarize(back)
    for field in ("done", "outcomes", "mean_reward", "pass_at_k", "tasks", "telemetry"):
        assert s2[field] == s1[field], field


@sandbox
def test_harbors_own_fields_alone_restore_outcomes_rewards_attempts_and_trajectories(runs, tmp_path):
    """A job without agentmill's records (as Harbor itself would write it) still imports to the same run
    (trials matched by the ATIF session id, which Harbor keeps)."""
    job = tmp_path / "job"
    export_run(runs["oracle"], "harbor-job", job, spec=KEEP_ALL)
    _strip_agentmill_records(job)
    import_harbor_job(job, tmp_path / "back")
    _same_trials(runs["oracle"], tmp_path / "back", by_session=True)
    # Harbor has no attempt index: attempts are numbered per task by start time, so each task keeps 0..k-1
    attempts = lambda run: sorted((r.trial["task"], r.trial["attempt"]) for r in iter_traces(run))  # noqa: E731
    assert attempts(tmp_path / "back") == attempts(runs["oracle"])
    assert summarize(tmp_path / "back")["pass_at_k"] == summarize(runs["oracle"])["pass_at_k"]


@sandbox
def test_the_exported_job_is_laid_out_as_harbor_writes_it(runs, tmp_path):
    job = tmp_path / "job"
    report = export_run(runs["nop"], "harbor-job", job, spec=KEEP_ALL)
    assert report.rows == len(TASKS)
    config, result = json.loads((job / "config.json").read_text()), json.loads((job / "result.json").read_text())
    assert config["job_name"] == "job" and config["n_attempts"] == 1 and config["agents"] == [agent_config("nop", None)]
    assert config["environment"]["import_path"] == SANDBOX_IMPORT_PATH and [d["path"] for d in config["datasets"]] == [
        str(sample_dataset_path())
    ]
    assert result["n_total_trials"] == len(TASKS) and result["stats"]["n_completed_trials"] == len(TASKS)
    assert result["stats"]["n_errored_trials"] == 0 and result["stats"]["n_pending_trials"] == 0
    assert validate_job_folder(job) == 3 + 4 * len(TASKS)  # every record reads as Harbor's models
    ((key, ev),) = result["stats"]["evals"].items()
    assert key == "nop__sample" and ev["metrics"] == [{"mean": 0.0}]
    trial_dirs = sorted(p for p in job.iterdir() if p.is_dir())
    assert sorted(ev["reward_stats"]["reward"]["0.0"]) == [p.name for p in trial_dirs]
    for folder in trial_dirs:
        assert re.fullmatch(r"[a-z-]{1,32}__[0-9a-f]{7}", folder.name)
        harbor = HarborTrial.model_validate_json((folder / "result.json").read_text())
        trial_config = json.loads((folder / "config.json").read_text())
        assert (
            harbor.trial_name == folder.name
            and harbor.config == trial_config
            and trial_config["job_id"] == result["id"]
        )
        assert harbor.trial_uri == folder.resolve().as_uri() and harbor.verifier_result.rewards == {"reward": 0.0}
        assert (folder / "verifier" / "reward.txt").read_text() == "0.0\n"
        assert (folder / "verifier" / "test-stdout.txt").exists() and not (folder / "exception.txt").exists()
        doc = json.loads((folder / "agent" / "trajectory.json").read_text())
        assert doc["schema_version"] == "ATIF-v1.4" and doc["steps"][0]["step_id"] == 1
        assert (
            harbor.started_at <= harbor.agent_execution.started_at <= harbor.verifier.finished_at <= harbor.finished_at
        )


def test_every_outcome_maps_to_harbors_exception_and_back(tmp_path):
    run = tmp_path / "run"
    outcomes = {
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
    for i, (outcome, reward) in enumerate(outcomes.items()):
        write_trial(
            run,
            f"{i:024x}",
            terminus_trajectory([("ls\n", "a b\n")] * 2),
            outcome=outcome,
            reward=reward,
            task=f"task-{i}",
        )
    job = tmp_path / "job"
    export_run(run, "harbor-job", job, spec=KEEP_ALL)
    result = json.loads((job / "result.json").read_text())
    (ev,) = result["stats"]["evals"].values()
    # n_trials: the trials whose reward Harbor counts (a reward, and no exception that voids it)
    assert ev["n_errors"] == 8 and ev["n_trials"] == 4 and "AgentTimeoutError" in ev["exception_stats"]
    assert result["stats"]["n_errored_trials"] == 8 and result["stats"]["n_completed_trials"] == 10
    for folder in (p for p in job.iterdir() if p.is_dir()):
        exc = json.loads((folder / "result.json").read_text())["exception_info"]
        assert (folder / "exception.txt").exists() == (exc is not None)
    _strip_agentmill_records(job)
    import_harbor_job(job, tmp_path / "back")
    got = {r.trial["task"]: r.outcome for r in iter_traces(tmp_path / "back")}
    assert got == {f"task-{i}": o for i, o in enumerate(outcomes)}


def test_harbor_trajectories_keep_fields_agentmill_does_not_model(tmp_path):
    original = atif("alpha", extra_fields=True)
    job = write_job(tmp_path / "jobs", [dict(task="alpha", name="alpha__aaaaaaa", reward=1.0, trajectory=original)])
    import_harbor_job(job, tmp_path / "run")
    out = tmp_path / "again"
    export_run(tmp_path / "run", "harbor-job", out, spec=KEEP_ALL)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    assert json.loads((folder / "agent" / "trajectory.json").read_text()) == original


def test_export_refuses_an_existing_folder_and_leaves_nothing_when_empty(tmp_path):
    run = tmp_path / "run"
    write_trial(run, "a" * 24, terminus_trajectory([("ls\n", "x\n")]), outcome="failed", reward=0.0)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(AgentmillError, match="already exists"):
        export_run(run, "harbor-job", tmp_path / "taken", spec=KEEP_ALL)
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    r = subprocess.run(
        [*CLI, "export", str(run), "--format", "harbor-job", "--out", str(tmp_path / "job")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "min_turns" in r.stderr  # the default filters drop the one-turn trace
    assert not (tmp_path / "job").exists() and not list(tmp_path.glob(".tmp-*"))


def test_secrets_in_a_trajectory_are_redacted_in_the_job(tmp_path):
    token = "ghp_" + "A1b2C3d4" * 5
    traj = Trajectory(
        session_id="s",
        agent=AgentInfo(name="terminus", version="1"),
        steps=[
            Step(step_id=1, source="user", message="go"),
            Step(step_id=2, source="agent", message=f"export T={token}"),
        ],
    )
    write_trial(tmp_path / "run", "b" * 24, traj, outcome="passed", reward=1.0)
    report = export_run(tmp_path / "run", "harbor-job", tmp_path / "job", spec=KEEP_ALL)
    text = next((tmp_path / "job").glob("*/agent/trajectory.json")).read_text()
    assert token not in text and "[REDACTED" in text and report.redactions == 1


def test_task_names_from_other_harnesses_make_plain_trial_folder_names(tmp_path):
    from agentmill.interop.harbor.job_export import trial_name

    assert trial_name("harbor/hello-world", "abcdef0123") == "hello-world__abcdef0"
    assert trial_name("../../etc/passwd", "abcdef0123") == "passwd__abcdef0"
    assert trial_name("..", "../x") == "task__x"
    job = write_job(
        tmp_path / "jobs",
        [
            dict(task="../../escape", name="e__0000001", reward=1.0),
            dict(task="../../escape", name="e vil;__0000002", reward=1.0),
        ],
    )
    import_harbor_job(job, tmp_path / "run")
    export_run(tmp_path / "run", "harbor-job", tmp_path / "out" / "job", spec=KEEP_ALL)
    names = sorted(p.name for p in (tmp_path / "out" / "job").iterdir() if p.is_dir())
    # Harbor's own trial name comes back when it is a plain name; any other is made from the task and trial id
    assert names[0] == "e__0000001" and re.fullmatch(r"escape__[0-9a-f]{7}", names[1]), names
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["job"] and not (tmp_path / "escape").exists()


@sandbox
def test_a_model_driven_terminus_run_round_trips_to_the_same_sft_rows(tmp_path):
    """Through a real endpoint (a scripted chat server): trajectories with reasoning, tokens and sampling come back
    exactly, so the SFT rows exported from the imported run equal those of the original, character for character."""
    from tests.conftest import REWARD_IF, simple_task
    from tests.helpers.chat_server import ChatServer, solving_policy

    data = tmp_path / "data"
    simple_task(data, "hello")
    simple_task(data, "goodbye", test_sh=REWARD_IF.format(cond="grep -qx goodbye /app/out.txt"))
    run = tmp_path / "run"
    with ChatServer(solving_policy({"hello": "echo hello > /app/out.txt\n"})) as srv:
        r = subprocess.run(
            [
                *CLI,
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
                "--attempts",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert r.returncode == 0, r.stderr[-2000:]
    export_run(run, "harbor-job", tmp_path / "job", spec=KEEP_ALL)
    validate_job_folder(tmp_path / "job")  # a model's trajectories (reasoning, tokens) read as Harbor's ATIF
    import_harbor_job(tmp_path / "job", tmp_path / "back")
    _same_trials(run, tmp_path / "back")
    rows = {}
    for name in ("run", "back"):
        export_run(tmp_path / name, "trl", tmp_path / f"{name}.jsonl", spec=KEEP_ALL)
        rows[name] = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
    assert rows["back"] == rows["run"] and len(rows["run"]) == 4
    assert {row["provenance"]["outcome"] for row in rows["run"]} == {"passed", "failed"}


def test_every_agentmill_outcome_has_a_harbor_exception_and_comes_back_as_itself():
    """The mapping is kept by outcome value (traces sit below verify): a new outcome must be added to it."""
    from agentmill.interop.harbor.schema import EXCEPTION_OF, outcome_of
    from agentmill.verify.outcome import Outcome

    assert set(EXCEPTION_OF) == {o.value for o in Outcome} - {"passed", "failed"}
    for outcome, exception in EXCEPTION_OF.items():
        back = outcome_of(exception, None)
        assert back == outcome or (outcome, back) == ("verifier_error", "verifier_error"), outcome
