"""Agents, found by name in the registry (agents/registry.py): oracle, nop, terminus, tools."""

from agentmill.agents.base import Agent, AgentResult
from agentmill.agents.nop import NopAgent
from agentmill.agents.oracle import OracleAgent
from agentmill.agents.registry import agent_class, agent_names, make_agent, model_agent_names, register, supports


def __getattr__(name: str):
    # older spellings, computed from the registry so they never go stale
    if name == "AGENT_NAMES":
        return agent_names()
    if name == "MODEL_AGENTS":
        return set(model_agent_names())
    raise AttributeError(name)


__all__ = [
    "Agent",
    "AgentResult",
    "NopAgent",
    "OracleAgent",
    "agent_class",
    "agent_names",
    "make_agent",
    "model_agent_names",
    "register",
    "supports",
]
