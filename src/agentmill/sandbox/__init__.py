"""Sandboxes: the protocol, the backend registry, the embedded bubblewrap backend, limits, and the tmux terminal."""

from agentmill.sandbox.bwrap import BwrapSandbox
from agentmill.sandbox.protocol import ExecResult, Limits, Sandbox, SandboxSpec
from agentmill.sandbox.registry import backend_names, create_sandbox, get_backend, sandbox_backend
from agentmill.sandbox.tmux import TmuxSession

__all__ = ["BwrapSandbox", "ExecResult", "Limits", "Sandbox", "SandboxSpec", "TmuxSession", "backend_names",
           "create_sandbox", "get_backend", "sandbox_backend"]
