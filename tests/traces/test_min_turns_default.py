"""min_turns' default fits the agent: a tools agent's 3-turn trace is kept, a terminus trace of 3 turns
is not; a min_turns the user set holds for every agent."""

from agentmill.traces.atif import AgentInfo, Step, Trajectory
from agentmill.traces.filters import FilterSpec, apply_filters, rules
from agentmill.traces.records import TraceRecord
from agentmill.traces.telemetry import Telemetry


def record(agent: str, turns: int) -> TraceRecord:
    trajectory = Trajectory(
        session_id=f"{agent}-{turns}",
        agent=AgentInfo(name=agent, version="1"),
        steps=[Step(step_id=1, source="user", message="do it")],
    )
    return TraceRecord(
        trial={"trial_id": f"{agent}-{turns}", "agent": agent},
        result={"outcome": "passed", "reward": 1.0},
        trajectory=trajectory,
        telemetry=Telemetry(assistant_turns=turns),
    )


def kept(spec: FilterSpec, records) -> list[str]:
    return [r.trial_id for r in apply_filters(records, rules(spec))[0]]


RECORDS = [record("tools", 3), record("tools", 1), record("terminus", 3), record("terminus", 6), record("oracle", 3)]


def test_the_default_keeps_short_tool_traces_only_for_tool_calling_model_agents():
    assert kept(FilterSpec(), RECORDS) == ["tools-3", "terminus-6"]
    assert kept(FilterSpec().merged(reward="any"), RECORDS) == ["tools-3", "terminus-6"]  # still the default


def test_a_min_turns_the_user_set_holds_for_every_agent():
    assert kept(FilterSpec(min_turns=5), RECORDS) == ["terminus-6"]
    assert kept(FilterSpec().merged(min_turns=5), RECORDS) == ["terminus-6"]
    assert kept(FilterSpec.model_validate({"min_turns": 3}), RECORDS) == [
        "tools-3",
        "terminus-3",
        "terminus-6",
        "oracle-3",
    ]
