"""Each filter on hand-built trajectories with known telemetry, boundaries included."""

import pytest

from agentmill.errors import AgentmillError
from agentmill.traces.filters import FilterSpec, apply_filters, rules
from agentmill.traces.records import iter_traces
from agentmill.traces.render import render
from agentmill.traces.tokens import TokenCounter
from tests.traces.builders import terminus_trajectory, write_trial


def turns(n, output="ok"):
    return [(f"echo {i}\n", output) for i in range(n)]


def run_filters(tmp_path, spec, counter=None):
    kept, funnel = apply_filters(
        iter_traces(tmp_path), rules(spec, counter, lambda r: (render(r.trajectory).messages, None))
    )
    return sorted(r.trial_id for r in kept), funnel


def test_min_turns_boundary(tmp_path):
    for n in (4, 5, 6):
        write_trial(tmp_path, f"t{n}", terminus_trajectory(turns(n)))
    kept, funnel = run_filters(tmp_path, FilterSpec())  # default: at least 5
    assert kept == ["t5", "t6"]
    step = next(s for s in funnel if s.name == "min_turns")
    assert (step.kept, step.dropped) == (2, 1)
    assert run_filters(tmp_path, FilterSpec(min_turns=0))[0] == ["t4", "t5", "t6"]


def test_outcomes_dropped_by_default_and_configurable(tmp_path):
    for outcome in ("passed", "failed", "agent_timeout", "verifier_error", "infra_error", "sandbox_error"):
        write_trial(tmp_path, outcome, terminus_trajectory(turns(5)), outcome=outcome)
    assert run_filters(tmp_path, FilterSpec())[0] == ["agent_timeout", "failed", "passed"]
    assert run_filters(tmp_path, FilterSpec(drop_outcomes=["agent_timeout"]))[0] == [
        "failed",
        "infra_error",
        "passed",
        "sandbox_error",
        "verifier_error",
    ]


def test_reward_filters(tmp_path):
    write_trial(tmp_path, "win", terminus_trajectory(turns(5)), outcome="passed", reward=1.0)
    write_trial(tmp_path, "half", terminus_trajectory(turns(5)), outcome="failed", reward=0.5)
    write_trial(tmp_path, "lose", terminus_trajectory(turns(5)), outcome="failed", reward=0.0)
    assert run_filters(tmp_path, FilterSpec(reward="success"))[0] == ["win"]
    assert run_filters(tmp_path, FilterSpec(reward="failure"))[0] == ["half", "lose"]
    assert run_filters(tmp_path, FilterSpec(min_reward=0.5))[0] == ["half", "win"]  # boundary kept


def test_completion_claimed(tmp_path):
    write_trial(tmp_path, "claimed", terminus_trajectory(turns(5)), completed=True)
    write_trial(tmp_path, "silent", terminus_trajectory(turns(5)), completed=False)
    assert run_filters(tmp_path, FilterSpec(completion="claimed"))[0] == ["claimed"]
    assert run_filters(tmp_path, FilterSpec(completion="unclaimed"))[0] == ["silent"]


def test_degenerate_tool_use(tmp_path):
    write_trial(tmp_path, "loop", terminus_trajectory([("ls\n", "x")] * 6))  # 5 repeats
    write_trial(
        tmp_path,
        "errors",
        terminus_trajectory([(f"c{i}\n", "bash: c: command not found") for i in range(3)] + turns(2)),
    )
    write_trial(
        tmp_path, "trunc", terminus_trajectory([(f"cat {i}\n", "a [... 9 characters omitted ...] b") for i in range(5)])
    )
    write_trial(tmp_path, "clean", terminus_trajectory(turns(5)))
    assert run_filters(tmp_path, FilterSpec(max_repeated_commands=4))[0] == ["clean", "errors", "trunc"]
    assert run_filters(tmp_path, FilterSpec(max_repeated_commands=5))[0] == ["clean", "errors", "loop", "trunc"]
    assert run_filters(tmp_path, FilterSpec(max_error_rate=0.6))[0] == [
        "clean",
        "errors",
        "loop",
        "trunc",
    ]  # 3/5 = 0.6 kept
    assert run_filters(tmp_path, FilterSpec(max_error_rate=0.59))[0] == ["clean", "loop", "trunc"]
    assert run_filters(tmp_path, FilterSpec(max_truncated=4))[0] == ["clean", "errors", "loop"]
    assert run_filters(tmp_path, FilterSpec(max_truncated=5))[0] == ["clean", "errors", "loop", "trunc"]  # 5 = 5 kept


def test_truncation_limit_keeps_a_trace_at_exactly_the_limit(tmp_path):
    for n in (2, 3, 4):
        write_trial(
            tmp_path,
            f"cut{n}",
            terminus_trajectory(
                [(f"cat {i}\n", "a [... 9 characters omitted ...] b") for i in range(n)] + turns(5 - n)
            ),
        )
    kept, funnel = run_filters(tmp_path, FilterSpec(max_truncated=3))
    assert kept == ["cut2", "cut3"]
    step = next(s for s in funnel if s.name == "truncation")
    assert (step.kept, step.dropped) == (2, 1)


def test_subagents(tmp_path):
    write_trial(tmp_path, "main", terminus_trajectory(turns(5)))
    write_trial(tmp_path, "sub", terminus_trajectory(turns(5), subagent=True))
    assert run_filters(tmp_path, FilterSpec())[0] == ["main"]
    assert run_filters(tmp_path, FilterSpec(subagents="keep"))[0] == ["main", "sub"]


def test_max_tokens_estimate_boundary(tmp_path):
    write_trial(tmp_path, "short", terminus_trajectory(turns(5)))
    write_trial(tmp_path, "long", terminus_trajectory(turns(5, output="x" * 4000)))
    counter = TokenCounter()
    short = [r for r in iter_traces(tmp_path) if r.trial_id == "short"][0]
    n = counter.count(render(short.trajectory).messages)
    assert run_filters(tmp_path, FilterSpec(max_tokens=n), counter)[0] == ["short"]  # exactly at the cutoff: kept
    assert run_filters(tmp_path, FilterSpec(max_tokens=n - 1), counter)[0] == []


def test_funnel_is_in_order_and_adds_up(tmp_path):
    write_trial(tmp_path, "a", terminus_trajectory(turns(6)), outcome="passed")
    write_trial(tmp_path, "b", terminus_trajectory(turns(2)), outcome="passed")
    write_trial(tmp_path, "c", terminus_trajectory(turns(6)), outcome="infra_error")
    kept, funnel = run_filters(tmp_path, FilterSpec(max_repeated_commands=10))
    assert [s.name for s in funnel] == ["input", "tamper", "subagents", "outcome", "min_turns", "repeated_commands"]
    assert [(s.kept, s.dropped) for s in funnel] == [(3, 0), (3, 0), (3, 0), (2, 1), (1, 1), (1, 0)]
    assert kept == ["a"]


def test_toml_spec_and_flag_override(tmp_path):
    f = tmp_path / "filters.toml"
    f.write_text('[filters]\nmin_turns = 3\nreward = "success"\ndrop_outcomes = []\n')
    spec = FilterSpec.from_toml(f)
    assert (spec.min_turns, spec.reward, spec.drop_outcomes) == (3, "success", [])
    assert spec.merged(min_turns=8, reward=None).min_turns == 8 and spec.merged(min_turns=8).reward == "success"
    f.write_text('[filters]\nmin_turns = "many"\n')
    with pytest.raises(AgentmillError, match="filters.toml: field 'min_turns'"):
        FilterSpec.from_toml(f)
    f.write_text("[filters]\nmin_turn = 3\n")
    with pytest.raises(AgentmillError, match="min_turn"):
        FilterSpec.from_toml(f)
