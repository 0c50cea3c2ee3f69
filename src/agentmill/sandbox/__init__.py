"""Sandboxes: the protocol, the backend registry, the embedded bubblewrap backend, limits, and the tmux terminal.

Importing the built-in backends here registers them (the registry itself imports none).
"""

from agentmill.sandbox.bwrap import BwrapSandbox
from agentmill.sandbox.overlay import BwrapOverlaySandbox  # registers "bwrap-overlay"
from agentmill.sandbox.protocol import ExecResult, Limits, Sandbox, SandboxSpec
from agentmill.sandbox.registry import backend_names, create_sandbox, get_backend, sandbox_backend
from agentmill.sandbox.tmux import TmuxSession

__all__ = [
    "BwrapOverlaySandbox",
    "BwrapSandbox",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxSpec",
    "TmuxSession",
    "backend_names",
    "create_sandbox",
    "get_backend",
    "sandbox_backend",
]
