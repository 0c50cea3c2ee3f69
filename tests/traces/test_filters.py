"""Each filter on hand-built trajectories with known telemetry, boundaries included."""

import pytest

from agentmill.errors import AgentmillError
from agentmill.traces.atif import AgentInfo, Step, Trajectory
from agentmill.traces.filters import (
    DEFAULT_DROP,
    RELAX,
    FilterSpec,
    Funnel,
    FunnelStep,
    apply_filters,
    emptied_by,
    relax_hint,
    rules,
)
from agentmill.traces.records import TraceRecord, iter_traces
from agentmill.traces.render import render
from agentmill.traces.telemetry import Telemetry
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


def _record(trial_id="r", *, result=None, tamper=0, turns=5) -> TraceRecord:
    return TraceRecord(
        trial={"trial_id": trial_id, "agent": "terminus"},
        result={"outcome": "passed", "reward": 1.0, **(result or {})},
        trajectory=Trajectory(
            session_id=trial_id,
            agent=AgentInfo(name="terminus", version="1"),
            steps=[Step(step_id=1, source="user", message="do it")],
        ),
        telemetry=Telemetry(assistant_turns=turns, tamper=tamper),
    )


def test_tamper_evidence_in_the_result_or_the_telemetry_drops_the_trial():
    evidence = [{"kind": "reward_file", "path": "/logs/verifier/reward.txt", "detail": "x"}]
    records = [
        _record("honest"),
        _record("in_result", result={"tamper": evidence}),  # telemetry from before the field: 0
        _record("in_telemetry", tamper=1),
        _record("one", tamper=1, result={"tamper": evidence}),
    ]
    kept, _ = apply_filters(records, rules(FilterSpec(min_turns=0)))
    assert [r.trial_id for r in kept] == ["honest"]
    kept, _ = apply_filters(records, rules(FilterSpec(min_turns=0, tamper="keep")))
    assert len(kept) == 4


def test_every_rule_is_named_described_and_has_a_hint_to_relax_it():
    spec = FilterSpec(
        reward="success",
        min_reward=0.5,
        completion="claimed",
        max_repeated_commands=3,
        max_error_rate=0.25,
        max_truncated=2,
        max_tokens=1000,
        drop_outcomes=["infra_error", "agent_error"],
    )
    active = rules(spec, TokenCounter(), lambda r: ([], None))
    assert [(name, description) for name, description, _ in active] == [
        ("tamper", "drop trials with tamper evidence"),
        ("subagents", "drop subagent traces"),
        ("outcome", "drop outcomes agent_error, infra_error"),
        ("reward", "keep successes (reward 1)"),
        ("min_reward", "reward >= 0.5"),
        ("completion", "completion claimed"),
        ("min_turns", ">= 5 assistant turns, 2 for tool-calling agents"),
        ("repeated_commands", "<= 3 repeated commands"),
        ("error_rate", "command error rate <= 0.25"),
        ("truncation", "<= 2 truncated observations"),
        ("max_tokens", f"<= 1000 tokens ({TokenCounter().label})"),
    ]
    for name, _, _ in active:
        assert relax_hint(name) == RELAX[name][0] and relax_hint(name, recipe=True) == RELAX[name][1]
    failure = [(n, d) for n, d, _ in rules(FilterSpec(reward="failure", min_turns=3))]
    assert ("reward", "keep failures") in failure and ("min_turns", ">= 3 assistant turns") in failure
    assert relax_hint("new_rule") == "change the new_rule rule's setting"
    assert relax_hint("new_rule", recipe=True) == "change the new_rule setting in [trace_filters]"


def test_prompt_rows_leave_out_only_the_trace_length_rules():
    spec = FilterSpec(max_tokens=10, max_truncated=1)
    names = [n for n, _, _ in rules(spec, TokenCounter(), lambda r: ([], None), prompt_rows=True)]
    assert names == ["tamper", "subagents", "outcome", "truncation"]
    assert spec.max_tokens == 10 and spec.min_turns == 5  # the caller's spec is left as it was


class _Template:
    """Stands where a transformers tokenizer with a chat template stands: records what it was given."""

    chat_template = "{{ messages }}"

    def __init__(self):
        self.seen_tools = []

    def apply_chat_template(self, messages, tools=None, tokenize=True):
        self.seen_tools.append(tools)
        return [0] * (10 * len(messages) + 100 * len(tools or ()))


def test_max_tokens_counts_the_tool_list_under_the_template_and_needs_a_renderer():
    messages = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]
    tools = [{"type": "function", "function": {"name": "bash"}}]
    template = _Template()
    active = rules(FilterSpec(min_turns=0, max_tokens=100), TokenCounter(template), lambda r: (messages, tools))
    assert apply_filters([_record()], active)[0] == []  # 20 for the messages + 100 for the tool list sent
    assert template.seen_tools == [tools]
    active = rules(FilterSpec(min_turns=0, max_tokens=120), TokenCounter(template), lambda r: (messages, tools))
    assert len(apply_filters([_record()], active)[0]) == 1  # exactly at the cutoff: kept
    # no counter given: the estimate, labelled as such
    active = rules(FilterSpec(min_turns=0, max_tokens=12), None, lambda r: (messages, None))
    assert active[-1][1] == f"<= 12 tokens ({TokenCounter().label})" and len(apply_filters([_record()], active)[0]) == 1
    with pytest.raises(ValueError, match="^max_tokens needs a renderer$"):
        rules(FilterSpec(max_tokens=5))


def test_the_funnel_names_the_first_rule_a_record_fails_and_records_those_it_passed():
    funnel = Funnel(rules(FilterSpec(min_turns=3)))
    short = _record("short", turns=2)
    assert funnel.admit(short) == "min_turns"
    assert short.passed_filters == ["tamper", "subagents", "outcome"]
    long = _record("long", turns=3)
    assert funnel.admit(long) is None and long.passed_filters == ["tamper", "subagents", "outcome", "min_turns"]
    steps = funnel.steps()
    assert (steps[0].name, steps[0].description, steps[0].kept, steps[0].dropped) == ("input", "finished trials", 2, 0)
    assert [(s.description, s.kept, s.dropped) for s in steps[1:]] == [
        ("drop trials with tamper evidence", 2, 0),
        ("drop subagent traces", 2, 0),
        (f"drop outcomes {', '.join(sorted(DEFAULT_DROP))}", 2, 0),
        (">= 3 assistant turns", 1, 1),
    ]


def test_emptied_by_names_the_rule_that_removed_the_last_records():
    step = FunnelStep
    assert emptied_by([step("input", "", 0, 0)]) is None  # nothing to begin with
    assert emptied_by([step("input", "", 3, 0), step("a", "", 3, 0), step("b", "", 1, 2)]) is None  # one kept
    emptied = [step("input", "", 3, 0), step("a", "", 1, 2), step("b", "", 0, 1), step("c", "", 0, 0)]
    assert emptied_by(emptied).name == "b"
    assert emptied_by([step("input", "", 3, 0), step("a", "", 0, 3), step("b", "", 0, 0)]).name == "a"  # the first rule
    assert emptied_by([step("input", "", 0, 0), step("a", "", 0, 0)]) is None  # an empty input is not emptied


def test_a_filters_file_without_a_table_and_its_errors(tmp_path):
    f = tmp_path / "flat.toml"
    f.write_text('min_turns = 2\nreward = "failure"\n')  # the settings at the top level
    assert (FilterSpec.from_toml(f).min_turns, FilterSpec.from_toml(f).reward) == (2, "failure")
    f.write_text("drop_outcomes = [1]\n")
    with pytest.raises(AgentmillError, match=r"flat.toml: field 'drop_outcomes\.0': "):
        FilterSpec.from_toml(f)
    f.write_text("min_turns = \n")
    with pytest.raises(AgentmillError, match=r"^" + str(f) + ": "):
        FilterSpec.from_toml(f)
    with pytest.raises(AgentmillError, match="missing.toml: "):
        FilterSpec.from_toml(f.parent / "missing.toml")
