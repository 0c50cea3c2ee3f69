"""The processes executor (rollout/executors/processes.py): jobs run in worker processes, each with
its own event loop and its share of the concurrency; the driver records each job once; a worker
that dies fails only its own jobs in flight, typed; a real rollout gives the same data as the local
executor."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmill.rollout.executor import make_executor
from tests.conftest import mixed_dataset, sandbox

ROOT = Path(__file__).resolve().parents[2]


class Work:
    """A job sleeps, then says where and when it ran; job `die_on` kills its worker process."""

    def __init__(self, die_on: int | None = None, sleep: float = 0.3):
        self.die_on, self.sleep = die_on, sleep

    async def __call__(self, job: int):
        if job == -1:
            raise ValueError("a bug in the work")
        if job == self.die_on:
            await asyncio.sleep(0.1)
            os._exit(3)
        started = time.time()
        await asyncio.sleep(self.sleep)
        return job, os.getpid(), started, time.time()

    def failure(self, job: int, message: str):
        return job, None, message, None


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch):
    """Workers unpickle `Work` by its module: they must find this test package."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


def _map(executor, work, jobs):
    calls = {"before": [], "after": []}

    def before(job):
        calls["before"].append((job, os.getpid()))

    async def after(job, result):
        calls["after"].append((job, os.getpid()))
        return result

    results = asyncio.run(executor.map(work, jobs, before=before, after=after))
    return results, calls


def test_jobs_run_in_the_workers_each_with_its_share_of_the_concurrency():
    executor = make_executor("processes", concurrency=4, workers=2)
    results, calls = _map(executor, Work(), list(range(8)))
    assert [r[0] for r in results] == list(range(8))
    pids = {r[1] for r in results}
    assert len(pids) == 2 and os.getpid() not in pids
    for pid in pids:  # at most 2 at once in each worker, and 2 at once did happen
        spans = [(r[2], r[3]) for r in results if r[1] == pid]
        peak = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
        assert peak == 2
    # before and after ran in the driver, once per job
    assert sorted(calls["before"]) == sorted(calls["after"]) == [(j, os.getpid()) for j in range(8)]


def test_a_dying_worker_fails_only_its_own_jobs_and_is_replaced():
    executor = make_executor("processes", concurrency=2, workers=2)
    results, calls = _map(executor, Work(die_on=1, sleep=0.5), list(range(6)))
    failed = [r for r in results if r[1] is None]
    assert [r[0] for r in failed] == [1]
    assert "its worker process died (exit 3)" in failed[0][2]
    assert all(r[1] is not None for r in results if r[0] != 1)
    assert sorted(j for j, _ in calls["after"]) == list(range(6))  # every job recorded, once
    assert len(executor.deaths) == 1


def test_the_concurrency_must_cover_the_workers():
    assert make_executor("processes", concurrency=3, workers=8).workers == 3
    with pytest.raises(ValueError, match="workers"):
        make_executor("processes", concurrency=3, workers=0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentmill.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_workers_only_with_the_processes_executor(tmp_path):
    r = _cli("rollout", "--sample", "--agent", "oracle", "--out", str(tmp_path / "run"), "--workers", "2")
    assert r.returncode != 0 and "--workers: only with --executor processes" in r.stderr + r.stdout


@sandbox
def test_a_rollout_on_worker_processes_gives_the_local_rollouts_data(tmp_path):
    data = mixed_dataset(tmp_path / "ds", good=4)
    local = _cli("rollout", str(data), "--agent", "oracle", "-c", "4", "--out", str(tmp_path / "local"))
    spread = _cli(
        "rollout",
        str(data),
        "--agent",
        "oracle",
        "-c",
        "4",
        "--executor",
        "processes",
        "--workers",
        "2",
        "--out",
        str(tmp_path / "spread"),
        "--no-store",
    )  # run here, not taken from the local run's store
    assert local.returncode == 0 and spread.returncode == 0, spread.stderr
    diff = _cli("diff", str(tmp_path / "local"), str(tmp_path / "spread"))
    assert diff.returncode == 0 and "same data" in diff.stdout + diff.stderr, diff.stdout + diff.stderr


def test_a_recipe_chooses_worker_processes():
    from pydantic import ValidationError

    from agentmill.recipe.schema import Rollout
    from agentmill.recipe.stages.rollout import _executor
    from agentmill.rollout.executors.processes import ProcessExecutor

    made = _executor(Rollout(agent="oracle", executor="processes", workers=2, concurrency=6), say=print)
    assert isinstance(made, ProcessExecutor) and (made.workers, made.concurrency) == (2, 6)
    with pytest.raises(ValidationError, match='workers: only with executor = "processes"'):
        Rollout(agent="oracle", workers=2)


def test_a_job_that_raises_is_recorded_as_a_failure_and_the_rest_run():
    executor = make_executor("processes", concurrency=2, workers=1)
    results, calls = _map(executor, Work(sleep=0.05), [0, -1, 1])
    assert results[1] == (-1, None, "it raised in its worker process: ValueError: a bug in the work", None)
    assert [r[0] for r in results] == [0, -1, 1] and results[0][1] is not None and results[2][1] is not None
    assert executor.deaths == []
