"""The rollout driver's memory stays flat in the number of tasks: jobs are read from an iterator as
runners free up, the plan is read back from the ledger a page at a time, and a task is loaded only
when its trial is dispatched (and checked against the hash it was planned with).
The figures are in benchmarks/driver_memory.py and docs/benchmarks.md; these tests pin the mechanism."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3

from agentmill.agents.registry import agent_class
from agentmill.rollout import ledger as ledger_module
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.executor import Executor, LocalExecutor
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.plan import TaskRef
from agentmill.rollout.runner import run_rollout
from agentmill.rollout.status import summarize
from agentmill.tasks import load_task, write_task
from agentmill.tasks.model import Task

TEST_SH = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"


def test_local_executor_takes_each_job_only_when_a_runner_is_free():
    pulled = 0
    pulled_when_started: list[int] = []

    def jobs():
        nonlocal pulled
        for i in range(10):
            pulled += 1
            yield i

    async def work(i):
        pulled_when_started.append(pulled)
        await asyncio.sleep(0.001)
        return i

    assert asyncio.run(LocalExecutor(2).map(work, jobs())) == list(range(10))
    # job i starts as the (i+1)th taken: the iterator is never read ahead (not one coroutine per job)
    assert pulled_when_started == [i + 1 for i in range(10)]


def test_the_unfinished_plan_is_read_a_page_at_a_time_in_plan_order(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_module, "PAGE", 3)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    count = ledger.set_plan((f"t{i:02d}", f"task{i}", 0, f"h{i}", f"/ds/task{i}") for i in range(10))
    assert count == 10
    for tid in ("t01", "t04"):  # finished by an earlier run
        ledger.start(tid, "x", "h", 0)
        ledger.finish(tid, {"outcome": "passed"})
    seen = []
    for row in ledger.unfinished_plan():
        seen.append(row[0])
        ledger.start(row[0], row[1], row[3], row[2])  # finishing rows meanwhile does not shift the pages
        ledger.finish(row[0], {"outcome": "passed"})
    assert seen == [f"t{i:02d}" for i in range(10) if i not in (1, 4)]
    assert ledger.unfinished_count() == 0
    ledger.close()


def test_a_ledger_from_before_the_plan_kept_task_folders_is_resumed(tmp_path):
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    db.execute("CREATE TABLE plan (trial_id TEXT PRIMARY KEY, task TEXT NOT NULL, attempt INTEGER NOT NULL)")
    db.execute("INSERT INTO plan VALUES ('old', 'task', 0)")
    db.commit()
    db.close()
    ledger = Ledger(tmp_path / "ledger.sqlite")
    assert list(ledger.unfinished_plan()) == [("old", "task", 0, None, None)]
    assert ledger.set_plan([("new", "task", 0, "h", "/ds/task")]) == 1
    assert list(ledger.unfinished_plan()) == [("new", "task", 0, "h", "/ds/task")]
    ledger.close()


class CountingExecutor(Executor):
    """Stands where LocalExecutor stands, without sandboxes: for each job, `before` (the driver loads
    its task), then a count of the Task objects alive in the driver, then a result (the trial's own
    work where its task no longer loads, else an unrun failure), then `after` (the driver records it)."""

    name = "counting"

    def __init__(self, root, every: int = 20):
        self.root, self.every, self.most_alive, self.jobs = str(root), every, 0, 0

    async def map(self, work, jobs, *, before=None, after=None) -> list:
        out = []
        for job in jobs:
            before(job)
            self.jobs += 1
            if self.jobs % self.every == 1:
                gc.collect()
                alive = sum(isinstance(o, Task) and str(o.path).startswith(self.root) for o in gc.get_objects())
                self.most_alive = max(self.most_alive, alive)  # this test's tasks only: other tests' may linger
            result = await work(job) if job.task is None else work.failure(job, "not run by this executor")
            out.append(await after(job, result))
        return out


def _dataset(root, n):
    for i in range(n):
        write_task(root / f"t{i:04d}", instruction=f"Task {i}.", test_sh=TEST_SH, solve_sh="true\n")
    return [TaskRef.of(load_task(p)) for p in sorted(root.iterdir())]


def _config(root, refs):
    return RolloutConfig(
        dataset=str(root),
        task_hashes={r.name: r.content_hash for r in refs},
        agent="nop",
        agent_version=agent_class("nop").version,
    )


def test_the_driver_holds_only_the_tasks_in_flight(tmp_path):
    refs = _dataset(tmp_path / "ds", 120)
    executor = CountingExecutor(tmp_path)
    report = asyncio.run(run_rollout(_config(tmp_path / "ds", refs), iter(refs), tmp_path / "run", executor=executor))
    assert (report.planned, report.ran, report.results) == (120, 120, [])  # no results kept unless asked
    assert executor.most_alive <= 2, f"{executor.most_alive} tasks alive in the driver at once"
    trial = json.loads(next((tmp_path / "run" / "trials").glob("*/trial.json")).read_text())
    assert trial["instruction"].startswith("Task ")  # loaded from its folder when dispatched
    summary = summarize(tmp_path / "run")
    assert summary["done"] == 120 and len(summary["trial_list"]) == 120
    brief = summarize(tmp_path / "run", trials=False)  # the status table's: the same figures, no list
    assert "trial_list" not in brief and brief == {k: v for k, v in summary.items() if k != "trial_list"}


def test_a_task_edited_after_planning_ends_task_error_and_does_not_run(tmp_path):
    refs = _dataset(tmp_path / "ds", 2)
    edited = tmp_path / "ds" / refs[1].name

    def edit_the_second(plan):  # while the first trial is dispatched, the second task's folder changes
        if plan.ref.name == refs[0].name:
            (edited / "instruction.md").write_text("Something else entirely.")

    config = _config(tmp_path / "ds", refs)
    asyncio.run(
        run_rollout(config, refs, tmp_path / "run", executor=CountingExecutor(tmp_path), on_start=edit_the_second)
    )
    rows = {r["task"]: r for r in Ledger(tmp_path / "run" / "ledger.sqlite").rows()}
    assert rows[refs[0].name]["outcome"] == "sandbox_error"  # the executor's unrun failure
    second = rows[refs[1].name]
    assert second["outcome"] == "task_error" and "edited since this run planned it" in second["exception"]
    trial = json.loads((tmp_path / "run" / "trials" / second["trial_id"] / "trial.json").read_text())
    assert trial["task_hash"] == refs[1].content_hash and trial["instruction"] is None
