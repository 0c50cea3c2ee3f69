"""The terminal agent (Terminus-2 protocol)."""

from agentmill.agents.terminus.agent import TerminusAgent

__all__ = ["TerminusAgent"]
