"""What tool-use tasks run on: gyms (schema, seed, tools), the in-sandbox tool host, tool sessions.

`open_tool_session(task, sandbox)` is what agents use (the oracle's replay of solution/calls.json
is agents/tool_replay.py); `prepare_tool_state` builds a trial's databases inside its sandbox.
"""

from agentmill.runtime.lazy import lazy_names

# names load on first use: `agentmill --help` imports this package's cli and must stay cheap
_WHERE = {
    name: f"agentmill.tools.{module}"
    for module, names in {
        "session": ["ToolResult", "ToolSession", "open_tool_session", "openai_tool"],
        "state": ["TOOLS_ROOT", "ToolEnvError", "gym_db", "prepare_tool_state"],
    }.items()
    for name in names
}
__getattr__, __dir__ = lazy_names(__name__, _WHERE)

__all__ = [
    "TOOLS_ROOT",
    "ToolEnvError",
    "ToolResult",
    "ToolSession",
    "gym_db",
    "open_tool_session",
    "openai_tool",
    "prepare_tool_state",
]
