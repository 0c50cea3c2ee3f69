"""Sandboxes: the protocol, the embedded bubblewrap backend, limits, and the tmux terminal."""

from agentmill.sandbox.bwrap import BwrapSandbox
from agentmill.sandbox.protocol import ExecResult, Limits, Sandbox, SandboxSpec
from agentmill.sandbox.tmux import TmuxSession

__all__ = ["BwrapSandbox", "ExecResult", "Limits", "Sandbox", "SandboxSpec", "TmuxSession"]
