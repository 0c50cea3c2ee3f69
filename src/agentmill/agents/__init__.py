"""Agents: the oracle, the nop agent; model-driven agents register here too."""

from agentmill.agents.base import Agent, AgentResult
from agentmill.agents.nop import NopAgent
from agentmill.agents.oracle import OracleAgent

AGENTS: dict[str, type] = {"oracle": OracleAgent, "nop": NopAgent}


def make_agent(name: str, **kwargs) -> Agent:
    try:
        return AGENTS[name](**kwargs)
    except KeyError:
        raise ValueError(f"unknown agent '{name}' (known: {', '.join(sorted(AGENTS))})") from None


__all__ = ["AGENTS", "Agent", "AgentResult", "NopAgent", "OracleAgent", "make_agent"]
