"""The ledger's recovery after a kill: a row left 'running' whose trial folder was already published
is settled from that folder (the trial is not run again: tokens not paid twice, the first result
not replaced); one without a folder is left to run again. Real SQLite, real folders."""

from __future__ import annotations

import json
import threading

from agentmill.rollout.ledger import Ledger


def _published(trials, trial_id, outcome="passed", reward=1.0):
    folder = trials / trial_id
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(
        json.dumps(
            {
                "outcome": outcome,
                "reward": reward,
                "exception": None,
                "tokens": {"prompt": 11, "completion": 5},
                "timings": {"total": 2.5},
            }
        )
    )


def test_a_running_row_with_a_published_folder_is_settled_not_rerun(tmp_path):
    trials = tmp_path / "trials"
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.start("done-before-kill", "t", "h", 0)
    ledger.start("lost-in-flight", "t", "h", 1)
    _published(trials, "done-before-kill", outcome="failed", reward=0.25)
    ledger.close()

    ledger = Ledger(tmp_path / "ledger.sqlite")  # the next process
    assert ledger.recover(trials) == (1, 1)
    assert ledger.done_ids() == {"done-before-kill"}  # what the runner skips
    assert ledger.running_ids() == {"lost-in-flight"}  # what it runs again
    row = next(r for r in ledger.rows() if r["trial_id"] == "done-before-kill")
    assert (
        row["outcome"],
        row["reward"],
        row["prompt_tokens"],
        row["completion_tokens"],
        row["seconds"],
        row["runs"],
    ) == ("failed", 0.25, 11, 5, 2.5, 1)
    assert ledger.recover(trials) == (0, 1)  # idempotent
    ledger.close()


def test_a_done_row_is_not_touched_by_recovery(tmp_path):
    trials = tmp_path / "trials"
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.start("a", "t", "h", 0)
    _published(trials, "a")
    ledger.finish("a", json.loads((trials / "a" / "result.json").read_text()))
    assert ledger.recover(trials) == (0, 0) and ledger.done_ids() == {"a"}
    ledger.close()


def test_counts_of_recovery_add_up_over_several_rows(tmp_path):
    trials = tmp_path / "trials"
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for i in range(4):
        ledger.start(f"t{i}", "t", "h", i)
    _published(trials, "t0")
    _published(trials, "t2")
    assert ledger.recover(trials) == (2, 2)
    ledger.close()


def test_a_rerun_of_a_row_clears_its_verdict_and_counts_the_run(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.start("a", "t", "h", 0)
    ledger.finish("a", {"outcome": "sandbox_error", "reward": None, "exception": "SandboxError: boom"})
    ledger.start("a", "t", "h", 0)  # `--retry infra` runs it again
    (row,) = ledger.rows()
    assert (row["state"], row["outcome"], row["reward"], row["exception"], row["runs"]) == (
        "running",
        None,
        None,
        None,
        2,
    )
    assert ledger.running_ids() == {"a"} and ledger.done_ids() == set()
    ledger.close()


def test_a_minimal_result_is_recorded_with_zero_tokens_and_the_rest_empty(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.start("a", "t", "h", 0)
    ledger.finish("a", {"outcome": "agent_error"})  # no tokens, timings, cost or exception recorded
    (row,) = ledger.rows()
    assert (row["state"], row["outcome"], row["prompt_tokens"], row["completion_tokens"]) == (
        "done",
        "agent_error",
        0,
        0,
    )
    assert (row["reward"], row["cost_usd"], row["seconds"], row["exception"]) == (None, None, None, None)
    ledger.close()


def test_every_field_of_a_result_reaches_its_column(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.start("a", "t", "h", 0)
    ledger.finish(
        "a",
        {
            "outcome": "failed",
            "reward": 0.5,
            "tokens": {"prompt": 7},  # completion missing: 0
            "cost_usd": 0.125,
            "timings": {"total": 3.0},
            "exception": "AssertionError: x",
        },
    )
    (row,) = ledger.rows()
    assert (row["reward"], row["prompt_tokens"], row["completion_tokens"], row["cost_usd"]) == (0.5, 7, 0, 0.125)
    assert (row["seconds"], row["exception"]) == (3.0, "AssertionError: x")
    ledger.close()


def test_rows_come_ordered_by_task_then_attempt(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for trial_id, task, attempt in (("z1", "zeta", 1), ("a2", "alpha", 2), ("z0", "zeta", 0), ("a0", "alpha", 0)):
        ledger.start(trial_id, task, "h", attempt)
    assert [r["trial_id"] for r in ledger.rows()] == ["a0", "a2", "z0", "z1"]
    ledger.close()


def test_the_plan_is_replaced_whole_and_counted(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    assert ledger.planned() is None  # no plan recorded
    ledger.set_plan([("a", "t", 0), ("b", "t", 1), ("c", "u", 0)])
    assert ledger.planned() == 3
    ledger.set_plan([("d", "v", 0)])  # the next invocation's plan, not added to the last one's
    assert ledger.planned() == 1
    ledger.set_plan([])
    assert ledger.planned() is None
    ledger.close()


def test_forget_removes_only_the_named_rows(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for t in ("a", "b", "c"):
        ledger.start(t, "t", "h", 0)
    ledger.forget(["a", "c"])
    assert [r["trial_id"] for r in ledger.rows()] == ["b"]
    ledger.close()


def test_rows_are_finished_from_another_thread(tmp_path):
    # the runner starts rows on the event loop and finishes them in its file threads
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.start("a", "t", "h", 0)
    worker = threading.Thread(target=ledger.finish, args=("a", {"outcome": "passed", "reward": 1.0}))
    worker.start()
    worker.join()
    assert ledger.done_ids() == {"a"}
    ledger.close()
