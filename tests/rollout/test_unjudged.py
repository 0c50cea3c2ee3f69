"""Unjudged trials (a judged check never ran for want of a judge) downstream of the verifier: never
a pass in status, pass@k, the mean reward, the recipe report, exports, RL rewards or `check`."""

from __future__ import annotations

import json
from pathlib import Path

from agentmill.recipe.report import write_report
from agentmill.rl.episode import Episode
from agentmill.rl.reward import RewardSettings, score_episode
from agentmill.rollout.check import CHECK_PASSES, CheckResult
from agentmill.rollout.commands import status_table
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.result import TrialResult
from agentmill.rollout.status import summarize
from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
from agentmill.verify.outcome import Outcome
from tests.traces.builders import terminus_trajectory, write_trial

# task a: one pass, one unjudged; task b: one failure, one unjudged
TRIALS = [
    ("a0", "a", "passed", 1.0),
    ("a1", "a", "unjudged", None),
    ("b0", "b", "failed", 0.0),
    ("b1", "b", "unjudged", None),
]


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    ledger = Ledger(run / "ledger.sqlite")
    try:
        for i, (tid, task, outcome, reward) in enumerate(TRIALS):
            write_trial(run, tid, terminus_trajectory([("ls\n", "x")] * 6), outcome=outcome, reward=reward, task=task)
            ledger.start(tid, task, f"hash-{task}", i // 2)
            ledger.finish(tid, {"outcome": outcome, "reward": reward})
    finally:
        ledger.close()
    return run


def test_status_keeps_unjudged_trials_out_of_pass_at_k_and_the_mean_reward(tmp_path):
    s = summarize(make_run(tmp_path))
    assert s["outcomes"] == {"failed": 1, "passed": 1, "unjudged": 2}
    assert s["unjudged"] == 2 and s["attempted"] == 2 and s["infra_failures"] == 0
    # counted as passes pass@1 would be 0.75, as failures 0.25: it is neither
    assert s["pass_at_k"]["1"]["mean"] == 0.5 and s["mean_reward"] == 0.5
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(status_table(s))
    text = console.export_text()
    assert "2 trials passed every check that ran but their reward needs a judge (set AGENTMILL_JUDGE_MODEL" in text


def test_export_drops_unjudged_trials_by_default(tmp_path):
    run = make_run(tmp_path)
    out = tmp_path / "sft.jsonl"
    report = export_run(run, "trl", out, spec=FilterSpec().merged(min_turns=0))
    assert report.rows == 2 and len(out.read_text().splitlines()) == 2
    assert next(f for f in report.funnel if f.name == "outcome").dropped == 2
    kept_all = export_run(run, "trl", tmp_path / "all.jsonl", spec=FilterSpec().merged(min_turns=0, drop_outcomes=[]))
    assert kept_all.rows == 4  # twin: the rule is what drops them


def test_the_recipe_report_says_how_many_trials_wait_for_a_judge(tmp_path):
    page = write_report(make_run(tmp_path), tmp_path / "report.html").read_text()
    assert "2 unjudged trials</b>" in page and "needs a judge" in page
    assert ">unjudged<" in page  # an outcome column of its own


def test_rl_never_pays_an_unjudged_episode_what_a_pass_pays():
    def scored(outcome, reward):
        result = TrialResult(task="t", task_hash="h", agent="a", agent_version="1", outcome=outcome, reward=reward)
        return score_episode(Episode(result), RewardSettings(error_reward=-0.5)).score

    assert scored(Outcome.UNJUDGED, None) == -0.5 and scored(Outcome.UNJUDGED, 1.0) == -0.5
    assert scored(Outcome.PASSED, 1.0) == 1.0 and scored(Outcome.FAILED, 0.0) == 0.0  # twins


def _trial(outcome: Outcome, exception: str | None = None) -> TrialResult:
    return TrialResult(task="t", task_hash="h", agent="x", agent_version="1", outcome=outcome, exception=exception)


def test_check_reports_a_task_that_needs_a_judge_and_does_not_call_it_ok(tmp_path):
    from agentmill.tasks.model import Task, TaskConfig

    task = Task.model_construct(name="t", path=tmp_path, config=TaskConfig())
    why = "explains: needs a judge (set AGENTMILL_JUDGE_MODEL/AGENTMILL_JUDGE_BASE_URL); every other check passed"
    needs = CheckResult(task, _trial(Outcome.UNJUDGED, why), _trial(Outcome.FAILED))
    assert needs.verdict == "needs_judge" and needs.verdict in CHECK_PASSES
    assert needs.reason.startswith("needs a judge (set AGENTMILL_JUDGE_MODEL") and "not run: explains" in needs.reason
    assert CheckResult(task, _trial(Outcome.PASSED), _trial(Outcome.FAILED)).verdict == "ok"  # twin
    # an oracle that fails a check that ran is still unsolvable, and a passing nop still vacuous
    assert CheckResult(task, _trial(Outcome.FAILED), _trial(Outcome.FAILED)).verdict == "unsolvable"
    assert CheckResult(task, _trial(Outcome.UNJUDGED, why), _trial(Outcome.PASSED)).verdict == "vacuous"


def test_harbor_export_names_unjudged_and_reads_it_back():
    from agentmill.interop.harbor.schema import error_policy, harbor_exception, outcome_of

    kind, _ = harbor_exception("unjudged", "explains: needs a judge", None)
    assert kind == "JudgeNotConfiguredError" and outcome_of(kind, None) == "unjudged"
    assert error_policy(kind)["has_valid_reward"] is False  # Harbor must not count it as a reward
    assert harbor_exception("passed", None, 1.0) is None  # twin


def test_the_trial_store_does_not_keep_an_unjudged_trial(tmp_path):
    from agentmill.rollout.store import TrialStore

    store = TrialStore(tmp_path / "store")
    for tid, outcome in (("u", "unjudged"), ("p", "passed")):
        folder = tmp_path / tid
        folder.mkdir()
        (folder / "result.json").write_text(json.dumps({"outcome": outcome}))
        assert store.put(tid, folder) is (outcome == "passed")  # a later run with a judge must judge it
