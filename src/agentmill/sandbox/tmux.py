"""A persistent interactive terminal inside a sandbox, driven with keystrokes, read as screen text.

The tmux server runs inside the sandbox (so it dies with it); every call is a short exec of the
tmux client against the server's private socket.
"""

from __future__ import annotations

import asyncio
import shlex

from agentmill.errors import SandboxError
from agentmill.sandbox.protocol import Sandbox

SOCKET = "/tmp/.agentmill-tmux"
# Keys that tmux understands by name; anything else is typed literally.
SPECIAL_KEYS = {"Enter", "Escape", "Tab", "BSpace", "Up", "Down", "Left", "Right", "Home", "End",
                "PageUp", "PageDown", "Space", "DC", "IC"} | {f"C-{c}" for c in "abcdefghijklmnopqrstuvwxyz\\[]"} | {f"M-{c}" for c in "abcdefghijklmnopqrstuvwxyz"}


class TmuxSession:
    def __init__(self, sandbox: Sandbox, *, name: str = "main", width: int = 160, height: int = 48,
                 history: int = 50_000, cwd: str | None = None):
        self.sandbox, self.name, self.width, self.height, self.history, self.cwd = sandbox, name, width, height, history, cwd

    def _tmux(self, *args: str) -> list[str]:
        return ["tmux", "-S", SOCKET, *args]

    async def _run(self, *args: str, timeout: float = 30.0) -> str:
        result = await self.sandbox.exec(self._tmux(*args), timeout=timeout, cwd=self.cwd)
        if result.returncode != 0:
            raise SandboxError(f"tmux {args[0]} failed ({result.returncode}): {result.stderr.strip()[:300]}")
        return result.stdout

    async def start(self) -> None:
        await self._run("new-session", "-d", "-s", self.name, "-x", str(self.width), "-y", str(self.height))
        await self._run("set-option", "-t", self.name, "history-limit", str(self.history))

    async def send_keys(self, keystrokes: str | list[str]) -> None:
        """Type keystrokes. A string is typed literally, its newlines pressed as Enter; a list may mix
        literal text with named keys ("C-c", "Enter", ...)."""
        items = _split_newlines(keystrokes) if isinstance(keystrokes, str) else keystrokes
        for item in items:
            if item in SPECIAL_KEYS:
                await self._run("send-keys", "-t", self.name, item)
            elif item:
                await self._run("send-keys", "-t", self.name, "-l", item)

    async def screen(self) -> str:
        """The visible screen as text."""
        return await self._run("capture-pane", "-p", "-J", "-t", self.name)

    async def history_text(self, lines: int = 2000) -> str:
        """Scrollback plus screen, up to `lines` lines back."""
        return await self._run("capture-pane", "-p", "-J", "-S", f"-{lines}", "-t", self.name)

    async def wait_idle(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def run_and_wait(self, command: str, timeout: float = 30.0) -> bool:
        """Type a command and block until it finishes (tmux wait-for), True unless timed out."""
        channel = "agentmill-done"
        await self.send_keys(f"{command}; tmux -S {shlex.quote(SOCKET)} wait-for -S {channel}\n")
        result = await self.sandbox.exec(self._tmux("wait-for", channel), timeout=timeout)
        return not result.timed_out

    async def stop(self) -> None:
        await self.sandbox.exec(self._tmux("kill-server"), timeout=5)


def _split_newlines(text: str) -> list[str]:
    out: list[str] = []
    for i, part in enumerate(text.split("\n")):
        if i:
            out.append("Enter")
        if part:
            out.append(part)
    return out
