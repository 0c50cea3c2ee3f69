from agentmill.traces.telemetry import aggregate, compute_telemetry
from tests.traces.builders import terminus_trajectory


def test_counts_from_a_known_trajectory():
    traj = terminus_trajectory(
        [
            ("ls\n", "a b"),
            ("cat missing\n", "cat: missing: No such file or directory"),  # error
            ("cat present\n", "hello"),  # changed retry after an error: self-correction
            ("ls\n", "a b"),  # repeated command
            ("ls\n", "a b [... 300 characters omitted ...] z"),  # repeated again, consecutive; truncated
        ],
        reasoning="hmm",
        parse_errors=2,
    )
    t = compute_telemetry(traj, {"outcome": "failed", "agent_metadata": {"terminus": {"completed": True}}})
    assert t.assistant_turns == 7 and t.assistant_tokens == 5 * 20 + 2 * 5
    assert t.commands == 5 and t.command_errors == 1 and t.error_rate == 0.2
    assert t.parse_errors == 2 and t.truncated_observations == 1
    assert t.self_corrections == 1
    assert t.repeated_commands == 2 and t.max_repeat_run == 2
    assert t.reasoning_steps == 5 and t.reasoning_chars == 15
    assert t.completion_claimed and t.premature_completion
    assert not t.timed_out and not t.is_subagent


def test_timeouts_subagents_and_aggregate():
    traj = terminus_trajectory([("ls\n", "x")], subagent=True)
    t = compute_telemetry(traj, {"outcome": "agent_timeout"})
    assert t.timed_out and t.is_subagent and not t.completion_claimed and not t.premature_completion
    agg = aggregate(
        [t, compute_telemetry(terminus_trajectory([("a\n", "error: boom"), ("b\n", "ok")]), {"outcome": "passed"})]
    )
    assert agg["trajectories"] == 2 and agg["mean_assistant_turns"] == 1.5
    assert agg["command_error_rate"] == 1 / 3 and agg["timed_out"] == 1
