"""The agent registry: one module plus one registration makes an agent everywhere."""

import pytest

from agentmill.agents import agent_class, agent_names, make_agent, model_agent_names, register, supports
from agentmill.agents.base import AgentResult, ScriptedAgentBase
from agentmill.agents.registry import BUILTIN, unregister
from agentmill.errors import AgentmillError


class EchoAgent(ScriptedAgentBase):
    name = "echo-test"
    version = "3"
    task_kinds = frozenset({"terminal"})

    def __init__(self, *, max_turns: int = 1):
        self.max_turns = max_turns

    async def run(self, task, sandbox, result: AgentResult) -> None:
        return None


@pytest.fixture
def echo():
    register(EchoAgent)
    yield EchoAgent
    unregister(EchoAgent.name)


def test_bundled_agents_are_listed_and_declare_what_they_are():
    assert set(BUILTIN) <= set(agent_names())
    for name in BUILTIN:
        cls = agent_class(name)
        assert cls.name == name and isinstance(cls.version, str)
        assert cls.rendering in ("text", "tool_calls") and cls.task_kinds
    assert agent_class("terminus").rendering == "text" and agent_class("terminus").needs_model
    assert agent_class("oracle").needs_solution and not agent_class("nop").needs_model
    assert "terminus" in model_agent_names() and "oracle" not in model_agent_names()


def test_a_registered_agent_is_known_everywhere(echo):
    assert "echo-test" in agent_names()
    agent = make_agent("echo-test", max_turns=7, max_context=100)  # settings it does not take are ignored
    assert isinstance(agent, EchoAgent) and agent.max_turns == 7
    assert agent.identity() == {"agent": "echo-test", "agent_version": "3"}


def test_settings_reach_the_agents_that_take_them():
    oracle = make_agent("oracle", max_turns=3)  # no constructor: nothing passed
    assert oracle.name == "oracle"

    class FakeClient:
        model = "m"

    terminus = make_agent("terminus", client=FakeClient(), max_turns=4, unrelated=1)
    assert terminus.max_turns == 4


def test_unknown_and_model_less_agents_are_clear_errors():
    with pytest.raises(ValueError, match=r"unknown agent 'nope'; did you mean 'nop'\? \(known: .*terminus"):
        agent_class("nope")
    with pytest.raises(AgentmillError, match="terminus agent needs a model"):
        make_agent("terminus")


def test_a_second_class_under_a_taken_name_is_refused(echo):
    class Impostor(EchoAgent):
        pass

    with pytest.raises(AgentmillError, match="already registered"):
        register(Impostor)
    register(EchoAgent)  # the same class again is fine


@pytest.mark.parametrize(
    "attr, value, message",
    [
        ("name", "", "needs a `name`"),
        ("name", "a b", "needs a `name`"),
        ("version", 2, "`version`"),
        ("needs_model", "yes", "`needs_model`"),
        ("task_kinds", {"terminal"}, "`task_kinds`"),
        ("task_kinds", frozenset(), "`task_kinds`"),
        ("rendering", "html", "`rendering`"),
    ],
)
def test_a_malformed_agent_class_is_refused(attr, value, message):
    bad = type("Bad", (EchoAgent,), {attr: value})
    with pytest.raises(AgentmillError, match=message):
        register(bad)
    assert "a b" not in agent_names()


def test_task_kinds_decide_support(echo):
    class Terminal:
        kind = "terminal"

    class Tools:
        kind = "tools"

    assert supports("echo-test", Terminal()) and not supports("echo-test", Tools())
    assert supports("oracle", Tools()) and supports("oracle", object())  # no kind: a terminal task
    assert not supports("terminus", Tools())
