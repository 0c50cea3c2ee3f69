"""The ledger's recovery after a kill: a row left 'running' whose trial folder was already published
is settled from that folder (the trial is not run again: tokens not paid twice, the first result
not replaced); one without a folder is left to run again. Real SQLite, real folders."""

from __future__ import annotations

import json

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
