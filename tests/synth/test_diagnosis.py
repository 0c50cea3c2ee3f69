from pathlib import Path

import pytest
from pydantic import ValidationError

from agentmill.errors import AgentmillError
from agentmill.rollout.ledger import Ledger
from agentmill.synth.diagnosis import TaskPasses, Thresholds, classify, read_pass_counts


def P(passes: int, attempts: int = 3) -> TaskPasses:
    return TaskPasses(attempts=attempts, passes=passes)


def test_labels_at_default_thresholds():
    target = {"a": P(0), "b": P(1), "c": P(1), "d": P(2), "e": P(3), "f": P(0)}
    teacher = {"a": P(2), "b": P(3), "c": P(1), "d": P(0), "e": P(3), "f": P(0)}
    d = classify(target, teacher)
    labels = {t.task: t.label for t in d.tasks}
    assert labels == {"a": "teach", "b": "teach", "c": "stretch", "d": "avoid", "e": "avoid", "f": "stretch"}
    assert d.by_label("teach") == ["a", "b"]
    assert d.thresholds == Thresholds()


def test_thresholds_are_configurable_and_recorded():
    th = Thresholds(target_max=0.0, teacher_min=1.0, avoid_min=0.5)
    d = classify({"a": P(1), "b": P(0), "c": P(0)}, {"a": P(3), "b": P(2), "c": P(3)}, th)
    labels = {t.task: t.label for t in d.tasks}
    assert labels == {"a": "undecided", "b": "stretch", "c": "teach"}
    assert "between" in d.tasks[0].reason
    again = type(d).model_validate_json(d.model_dump_json())
    assert again.thresholds.teacher_min == 1.0


def test_missing_side_is_undecided_not_dropped():
    d = classify({"a": P(0)}, {"b": P(3)})
    assert [(t.task, t.label) for t in d.tasks] == [("a", "undecided"), ("b", "undecided")]
    assert "teacher" in d.tasks[0].reason and "target" in d.tasks[1].reason


def test_bad_inputs_rejected():
    with pytest.raises(ValidationError):
        TaskPasses(attempts=2, passes=3)
    with pytest.raises(ValidationError):
        Thresholds(target_max=0.7, avoid_min=0.6)
    with pytest.raises(ValidationError):
        Thresholds(extra=1)


def _ledger(run: Path, trials: list[tuple[str, int, str | None]]) -> None:
    run.mkdir()
    led = Ledger(run / "ledger.sqlite")
    for task, attempt, outcome in trials:
        tid = f"{task}-{attempt}"
        led.start(tid, task, "h", attempt)
        if outcome is not None:
            led.finish(tid, {"outcome": outcome, "reward": 1.0 if outcome == "passed" else 0.0})
    led.close()


def test_read_pass_counts_excludes_infra_and_unfinished(tmp_path):
    _ledger(
        tmp_path / "run",
        [
            ("a", 0, "passed"),
            ("a", 1, "infra_error"),
            ("a", 2, "failed"),
            ("b", 0, "sandbox_error"),
            ("b", 1, "passed"),
            ("b", 2, None),
            ("c", 0, "agent_timeout"),
        ],
    )
    counts = read_pass_counts(tmp_path / "run")
    assert counts == {"a": P(1, 2), "b": P(1, 1), "c": P(0, 1)}


def test_read_pass_counts_end_to_end_classification(tmp_path):
    _ledger(tmp_path / "tgt", [("x", i, "failed") for i in range(3)] + [("y", i, "passed") for i in range(3)])
    _ledger(tmp_path / "tch", [("x", i, "passed") for i in range(3)] + [("y", i, "passed") for i in range(3)])
    d = classify(read_pass_counts(tmp_path / "tgt"), read_pass_counts(tmp_path / "tch"))
    assert {t.task: t.label for t in d.tasks} == {"x": "teach", "y": "avoid"}


def test_read_pass_counts_not_a_run_folder(tmp_path):
    with pytest.raises(AgentmillError, match="not a run folder"):
        read_pass_counts(tmp_path)
    assert not (tmp_path / "ledger.sqlite").exists()
