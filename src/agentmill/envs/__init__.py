"""Stateful tool environments: gyms (schema, seed, tools), the in-sandbox tool host, tool sessions.

`open_tool_session(task, sandbox)` is what agents use (the oracle's replay of solution/calls.json
is agents/tool_replay.py); `prepare_tool_state` builds a trial's databases inside its sandbox.
"""

from agentmill.envs.session import ToolResult, ToolSession, open_tool_session, openai_tool
from agentmill.envs.state import TOOLS_ROOT, ToolEnvError, gym_db, prepare_tool_state

__all__ = ["TOOLS_ROOT", "ToolEnvError", "ToolResult", "ToolSession", "gym_db", "open_tool_session", "openai_tool",
           "prepare_tool_state"]
