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
        literal text with named keys ("C-c", "Enter", ...). One tmux client exec types them all
        (a command sequence)."""
        items = _split_newlines(keystrokes) if isinstance(keystrokes, str) else keystrokes
        sequence: list[str] = []
        for item in items:
            if item in SPECIAL_KEYS:
                args = ["send-keys", "-t", self.name, item]
            elif item:
                args = ["send-keys", "-t", self.name, "-l", _tmux_literal(item)]
            else:
                continue
            sequence += [";", *args] if sequence else args
        if sequence:
            await self._run(*sequence)

    async def wait_for_prompt(self, prompt: str, before: str, seconds: float, lines: int = 2000) -> str | None:
        """After a one-line command was typed: poll until the shell shows `prompt` again below new
        output (the command finished), at most `seconds`. Returns the scrollback (as history_text)
        when it did, None when the time ran out first. `before` is the scrollback before typing."""
        deadline = asyncio.get_running_loop().time() + seconds
        delay = 0.005
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return None
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.25)
            text = await self.history_text(lines)
            if prompt_returned(prompt, before, text):
                return text

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


def _tmux_literal(text: str) -> str:
    """tmux reads an argument ending in ';' as a command separator and one ending in '\\;' as text
    ending in ';' (dropping the backslash): escaped so, text ending in ';' (`find ... \\;`) arrives whole."""
    return text[:-1] + "\\;" if text.endswith(";") else text


def last_line(text: str) -> str:
    return text.rstrip("\n").rsplit("\n", 1)[-1]


def prompt_returned(prompt: str, before: str, after: str) -> bool:
    """The screen grew by at least one finished line and its last line is the shell's prompt again."""
    before, after = before.rstrip("\n"), after.rstrip("\n")
    return bool(prompt.strip()) and after != before and "\n" in after and last_line(after).rstrip() == prompt.rstrip() \
        and (not after.startswith(before) or "\n" in after[len(before):])


def _split_newlines(text: str) -> list[str]:
    out: list[str] = []
    for i, part in enumerate(text.split("\n")):
        if i:
            out.append("Enter")
        if part:
            out.append(part)
    return out
