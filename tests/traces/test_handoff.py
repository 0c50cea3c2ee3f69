"""Rendering and records across a context handoff (traces/handoff.py), on hand-built trajectories:
no sandbox, no server (tests/agents/test_handoff.py checks the same against what a server received)."""

from agentmill.traces.atif import Observation, ObservationResult, Step
from agentmill.traces.records import load_trace, subagent_records
from agentmill.traces.render import render
from agentmill.traces.telemetry import compute_telemetry
from tests.traces.builders import terminus_trajectory, write_trial


def handed_off():
    """Two early turns, a summary request (the subagent), then a fresh conversation with one turn."""
    t = terminus_trajectory([("ls\n", "a b"), ("cat a\n", "early output")])
    early = [s.model_copy(deep=True) for s in t.steps]
    sub = [
        *early,
        Step(step_id=len(early) + 1, source="user", message="Summarise."),
        Step(step_id=len(early) + 2, source="agent", message="I listed and read a."),
    ]
    n = len(t.steps)
    t.steps += [
        Step(
            step_id=n + 1,
            source="system",
            message="You drive a terminal.",
            extra={
                "context_handoff": {
                    "handoff": 1,
                    "tokens_before": 9,
                    "subagent": {"steps": [s.model_dump(mode="json") for s in sub]},
                }
            },
        ),
        Step(step_id=n + 2, source="user", message="Task: do the thing.\nSummary: I listed and read a."),
        Step(
            step_id=n + 3,
            source="agent",
            message='{"task_complete": true}',
            observation=Observation(results=[ObservationResult(content="confirm?")]),
        ),
        Step(step_id=n + 4, source="agent", message='{"task_complete": true}'),
    ]
    return t


def test_a_row_is_the_conversation_after_the_last_handoff():
    messages = render(handed_off(), reasoning="drop").messages
    assert messages == [
        {"role": "system", "content": "You drive a terminal."},
        {"role": "user", "content": "Task: do the thing.\nSummary: I listed and read a."},
        {"role": "assistant", "content": '{"task_complete": true}'},
        {"role": "user", "content": "confirm?"},
        {"role": "assistant", "content": '{"task_complete": true}'},
    ]


def test_a_trajectory_without_handoff_renders_whole():
    t = terminus_trajectory([("ls\n", "a b")])
    assert [m["role"] for m in render(t, reasoning="drop").messages] == ["system", "user", "assistant"]


def test_the_summary_request_is_a_subagent_record(tmp_path):
    t = handed_off()
    t.session_id = "trial-1"
    folder = write_trial(tmp_path / "run", "trial-1", t)
    rec = load_trace(folder)
    assert not rec.telemetry.is_subagent
    (sub,) = subagent_records(rec)
    assert sub.trial_id == "trial-1.summary-1" and sub.trial["parent_trial_id"] == "trial-1"
    assert sub.trajectory.extra["parent_session_id"] == "trial-1" and sub.telemetry.is_subagent
    assert compute_telemetry(sub.trajectory, sub.result).is_subagent
    messages = render(sub.trajectory, reasoning="drop").messages
    assert messages[-2:] == [
        {"role": "user", "content": "Summarise."},
        {"role": "assistant", "content": "I listed and read a."},
    ]
    assert {"role": "user", "content": "early output"} in messages  # the earlier conversation, as the request sent it


def test_rl_rows_count_trials_not_their_subagents(tmp_path):
    from agentmill.traces.formats import rl_rows

    t = handed_off()
    rec = load_trace(write_trial(tmp_path / "run", "trial-1", t))
    (row,) = rl_rows([rec, *subagent_records(rec)])
    assert row["extra_info"]["teacher_attempts"] == 1
    # the prompt is the trial's first opening, not the conversation after the handoff
    assert row["prompt"] == [
        {"role": "system", "content": "You drive a terminal."},
        {"role": "user", "content": "Task: do the thing."},
    ]


def test_a_broken_subagent_record_is_reported_and_the_trial_still_exported(tmp_path):
    from agentmill.traces.export import export_run
    from agentmill.traces.filters import FilterSpec
    from agentmill.traces.records import iter_traces

    t = handed_off()
    marked = next(s for s in t.steps if s.extra and "context_handoff" in s.extra)
    marked.extra["context_handoff"]["subagent"]["steps"] = [{"source": "nobody"}]
    write_trial(tmp_path / "run", "trial-1", t)
    errors: list[str] = []
    assert [r.trial_id for r in iter_traces(tmp_path / "run", errors=errors)] == ["trial-1"]
    assert len(errors) == 1 and "trial-1" in errors[0]
    report = export_run(
        tmp_path / "run",
        "trl",
        tmp_path / "rows.jsonl",
        spec=FilterSpec(subagents="keep", min_turns=0, drop_outcomes=[]),
        reasoning="drop",
    )
    assert report.rows == 1 and len(report.skipped) == 1


def test_a_harbor_job_keeps_the_summary_beside_its_trial_not_as_a_trial(tmp_path):
    import json

    from agentmill.traces.export import export_run
    from agentmill.traces.filters import FilterSpec

    t = handed_off()
    write_trial(tmp_path / "run", "trial-1", t)
    job = tmp_path / "job"
    report = export_run(
        tmp_path / "run", "harbor-job", job, spec=FilterSpec(subagents="keep", min_turns=0, drop_outcomes=[])
    )
    assert report.rows == 1
    (trial,) = [p for p in job.iterdir() if p.is_dir()]
    assert sorted(p.name for p in (trial / "agent").iterdir()) == ["trajectory.json", "trajectory.summary-1.json"]
    sub = json.loads((trial / "agent" / "trajectory.summary-1.json").read_text())
    assert sub["extra"]["parent_session_id"] == t.session_id and sub["steps"][-1]["message"] == "I listed and read a."
    dropped = export_run(
        tmp_path / "run", "harbor-job", tmp_path / "job2", spec=FilterSpec(min_turns=0, drop_outcomes=[])
    )
    (trial2,) = [p for p in (tmp_path / "job2").iterdir() if p.is_dir()]
    assert dropped.rows == 1 and [p.name for p in (trial2 / "agent").iterdir()] == ["trajectory.json"]
