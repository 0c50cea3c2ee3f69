"""The tool-calling agent (native OpenAI function calling)."""

from agentmill.agents.tools.agent import ToolsAgent

__all__ = ["ToolsAgent"]
