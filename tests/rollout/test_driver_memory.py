"""The rollout driver's memory stays flat in the number of tasks: the task references are spilled
to disk (TaskList), each task's hash is recorded in the ledger, jobs are read from an iterator as
runners free up, the plan is read back from the ledger a page at a time, and a task is loaded only
when its trial is dispatched (and checked against the hash it was planned with).
The figures are in benchmarks/driver_memory.py and docs/benchmarks.md; these tests pin the mechanism."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import tracemalloc

import pytest

from agentmill.agents.registry import agent_class
from agentmill.errors import AgentmillError
from agentmill.rollout import ledger as ledger_module
from agentmill.rollout import task_list as task_list_module
from agentmill.rollout.commands import rollout_tasks
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.executor import Executor, LocalExecutor
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.plan import TaskRef
from agentmill.rollout.runner import preflight, run_rollout
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
    its task), then a count of the Task objects and task references alive in the driver, then a
    result (the trial's own work where its task no longer loads, else an unrun failure), then
    `after` (the driver records it)."""

    name = "counting"

    def __init__(self, root, every: int = 20):
        self.root, self.every, self.most_alive, self.most_refs, self.jobs = str(root), every, 0, 0, 0

    async def map(self, work, jobs, *, before=None, after=None) -> list:
        out = []
        for job in jobs:
            before(job)
            self.jobs += 1
            if self.jobs % self.every == 1:
                gc.collect()
                # this test's tasks only (other tests' may linger); counted, never held (a list kept
                # until the next count would keep these objects alive into it)
                kinds = [
                    type(o)
                    for o in gc.get_objects()
                    if isinstance(o, Task | TaskRef) and str(o.path).startswith(self.root)
                ]
                self.most_alive = max(self.most_alive, kinds.count(Task))
                self.most_refs = max(self.most_refs, kinds.count(TaskRef))
            result = await work(job) if job.task is None else work.failure(job, "not run by this executor")
            out.append(await after(job, result))
        return out


def _dataset(root, n):
    for i in range(n):
        write_task(root / f"t{i:04d}", instruction=f"Task {i}.", test_sh=TEST_SH, solve_sh="true\n")
    return [TaskRef.of(load_task(p)) for p in sorted(root.iterdir())]


def _config(root, refs=None):
    return RolloutConfig(dataset=str(root), agent="nop", agent_version=agent_class("nop").version)


def _traced(tasks, marks: dict, at: tuple[int, int]):
    """`tasks`, noting the Python heap the driver holds (tracemalloc) when the first and the last
    of `at` have been planned: what planning keeps per task is the difference. SQLite's page cache
    (its allocations are traced too, from the ledger's calls) is left out: it is bounded by its
    cache_size, and fills as the ledger grows."""
    for i, t in enumerate(tasks):
        if i in at:
            gc.collect()
            snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, ledger_module.__file__)])
            marks[i] = sum(stat.size for stat in snapshot.statistics("filename"))
            del snapshot
        yield t


def test_the_driver_holds_only_the_tasks_in_flight(tmp_path, monkeypatch):
    monkeypatch.setattr(task_list_module, "PAGE", 8)  # pages smaller than the tasks measured between
    _dataset(tmp_path / "ds", 120)
    # as `agentmill rollout` plans: the references spilled to disk, checked for edits, then planned
    refs = rollout_tasks(tmp_path / "ds", [], "nop", say=print)
    executor = CountingExecutor(tmp_path)
    marks: dict[int, int] = {}
    preflight(tmp_path / "run", _config(tmp_path / "ds"), refs)
    tracemalloc.start()
    try:
        traced = _traced(refs, marks, (20, 119))
        report = asyncio.run(run_rollout(_config(tmp_path / "ds"), traced, tmp_path / "run", executor=executor))
    finally:
        tracemalloc.stop()
        refs.close()
    assert (report.planned, report.ran, report.results) == (120, 120, [])  # no results kept unless asked
    assert executor.most_alive <= 2, f"{executor.most_alive} tasks alive in the driver at once"
    # no list of references anywhere: one per trial in flight (the TaskList and the ledger hold the rest)
    assert executor.most_refs <= 2, f"{executor.most_refs} task references alive in the driver at once"
    # nor any per-task record (a task's name and hash take over 150 bytes in a dict): planning 99 more
    # tasks keeps well under 40 bytes each on the Python heap
    per_task = (marks[119] - marks[20]) / 99
    assert per_task < 40, f"planning kept {per_task:.0f} bytes per task"
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


def _folder_state(run):
    """Everything a run folder holds that a refused resume must leave alone."""
    db = sqlite3.connect(run / "ledger.sqlite")
    tables = {t: sorted(db.execute(f"SELECT * FROM {t}")) for t in ("trials", "plan", "tasks")}
    db.close()
    return (run / "config.json").read_bytes(), tables, sorted(p.name for p in (run / "trials").iterdir())


def test_a_resume_with_an_edited_task_is_refused_before_anything_runs_and_writes_nothing(tmp_path):
    refs = _dataset(tmp_path / "ds", 4)
    config, run = _config(tmp_path / "ds"), tmp_path / "run"
    asyncio.run(run_rollout(config, refs[:3], run, executor=CountingExecutor(tmp_path)))  # t0003 left out
    before = _folder_state(run)
    for name in ("t0001", "t0003"):  # one planned, one only in the dataset since: both recorded
        (tmp_path / "ds" / name / "instruction.md").write_text("Something else entirely.")
    write_task(tmp_path / "ds" / "t0004", instruction="Task 4.", test_sh=TEST_SH, solve_sh="true\n")  # added
    edited = [TaskRef.of(load_task(p)) for p in sorted((tmp_path / "ds").iterdir())]
    with pytest.raises(AgentmillError, match=r"tasks: 1 edited since the run began \(t0001\)"):
        preflight(run, config, edited)  # what the CLI checks before a model server starts
    executor = CountingExecutor(tmp_path)
    with pytest.raises(AgentmillError, match=r"refusing to resume: tasks: 1 edited since the run began \(t0001\)"):
        asyncio.run(run_rollout(config, iter(edited), run, executor=executor))  # an iterator: checked as planned
    assert executor.jobs == 0 and _folder_state(run) == before  # not t0004's record, not a new plan
    # the edited task left out, the run grows by t0003 (never recorded) and t0004
    report = asyncio.run(run_rollout(config, [edited[0], *edited[2:]], run, executor=CountingExecutor(tmp_path)))
    assert (report.ran, report.skipped) == (2, 2)
    # t0001 keeps its recorded hash though this run left it out: still refused
    with pytest.raises(AgentmillError, match=r"tasks: 1 edited since the run began \(t0001\)"):
        preflight(run, config, edited)


def test_an_old_run_folder_with_task_hashes_in_config_json_resumes_with_the_same_trials(tmp_path):
    refs = _dataset(tmp_path / "ds", 3)
    config, run = _config(tmp_path / "ds"), tmp_path / "run"
    asyncio.run(run_rollout(config, refs, run, executor=CountingExecutor(tmp_path)))
    ids = sorted(p.name for p in (run / "trials").iterdir())
    # the folder as an older agentmill left it: every task's hash in config.json, none in the ledger
    # (a task it planned once, "gone", is no longer in the dataset)
    old = json.loads((run / "config.json").read_text())
    old["task_hashes"] = {**{r.name: r.content_hash for r in refs}, "gone": "0" * 64}
    (run / "config.json").write_text(json.dumps(old))
    db = sqlite3.connect(run / "ledger.sqlite")
    db.execute("DROP TABLE tasks")
    db.commit()
    db.close()
    (tmp_path / "ds" / "t0002" / "instruction.md").write_text("Something else entirely.")
    edited = [TaskRef.of(load_task(p)) for p in sorted((tmp_path / "ds").iterdir())]
    with pytest.raises(AgentmillError, match=r"tasks: 1 edited since the run began \(t0002\)"):
        preflight(run, config, edited)  # refused from config.json's record
    with pytest.raises(AgentmillError, match=r"tasks: 1 edited since the run began \(t0002\)"):
        asyncio.run(run_rollout(config, iter(edited), run, executor=CountingExecutor(tmp_path)))
    assert "task_hashes" in json.loads((run / "config.json").read_text())  # the refusal migrated nothing
    report = asyncio.run(run_rollout(config, iter(refs), run, executor=CountingExecutor(tmp_path)))
    assert (report.planned, report.ran, report.skipped) == (3, 0, 3)  # the same trial ids: nothing to run
    assert sorted(p.name for p in (run / "trials").iterdir()) == ids
    assert "task_hashes" not in json.loads((run / "config.json").read_text())  # moved into the ledger
    db = sqlite3.connect(run / "ledger.sqlite")
    assert dict(db.execute("SELECT name, task_hash FROM tasks")) == old["task_hashes"]
    db.close()
    with pytest.raises(AgentmillError, match=r"tasks: 1 edited since the run began \(t0002\)"):
        preflight(run, config, edited)  # refused from the ledger now
