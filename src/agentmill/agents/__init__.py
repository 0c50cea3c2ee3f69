"""Agents: the oracle, the nop agent; model-driven agents register here too."""

from agentmill.agents.base import Agent, AgentResult
from agentmill.agents.nop import NopAgent
from agentmill.agents.oracle import OracleAgent

AGENT_NAMES = ("oracle", "nop", "terminus")
MODEL_AGENTS = {"terminus"}


def agent_class(name: str) -> type:
    if name == "terminus":
        from agentmill.agents.terminus import TerminusAgent

        return TerminusAgent
    classes = {"oracle": OracleAgent, "nop": NopAgent}
    if name not in classes:
        raise ValueError(f"unknown agent '{name}' (known: {', '.join(AGENT_NAMES)})")
    return classes[name]


def make_agent(name: str, *, client=None, max_turns: int = 50) -> Agent:
    """Build an agent by name; model-driven agents need a ModelClient."""
    if name == "oracle":
        return OracleAgent()
    if name == "nop":
        return NopAgent()
    if name == "terminus":
        from agentmill.agents.terminus import TerminusAgent

        if client is None:
            raise ValueError("the terminus agent needs a model (--model)")
        return TerminusAgent(client, max_turns=max_turns)
    raise ValueError(f"unknown agent '{name}' (known: {', '.join(AGENT_NAMES)})")


__all__ = ["AGENT_NAMES", "MODEL_AGENTS", "agent_class", "Agent", "AgentResult", "NopAgent", "OracleAgent", "make_agent"]
