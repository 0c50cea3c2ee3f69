"""A persistent interactive terminal inside a sandbox, driven with keystrokes, read as screen text.

The tmux server runs inside the sandbox (so it dies with it). Commands go over a persistent
control-mode channel (sandbox/tmux_channel.py) when the sandbox and its tmux allow one, else each
is a short exec of the tmux client against the server's private socket; both give the same bytes.
If the channel is lost the session goes on with execs, except when a command with effects
(send-keys) may or may not have run: that raises SandboxError (the agent broke its terminal).
AGENTMILL_TMUX_CHANNEL=0 turns the channel off.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Sequence
from typing import cast

from agentmill.errors import SandboxError
from agentmill.sandbox.protocol import Capability, Sandbox, WithGuestSocket
from agentmill.sandbox.tmux_channel import (
    CLIENT_FLAGS,
    ChannelLostError,
    NotSendableError,
    TmuxChannel,
    TmuxCommandError,
)

SOCKET = "/tmp/.agentmill-tmux"
ECHO_TAIL = 24  # characters of the text typed last that a settled look waits to see echoed
ECHO_WITHIN = 5.0  # seconds it waits for them at most (a loaded machine; or nothing echoes)
# Keys that tmux understands by name; anything else is typed literally.
SPECIAL_KEYS = (
    {
        "Enter",
        "Escape",
        "Tab",
        "BSpace",
        "Up",
        "Down",
        "Left",
        "Right",
        "Home",
        "End",
        "PageUp",
        "PageDown",
        "Space",
        "DC",
        "IC",
    }
    | {f"C-{c}" for c in "abcdefghijklmnopqrstuvwxyz\\[]"}
    | {f"M-{c}" for c in "abcdefghijklmnopqrstuvwxyz"}
)


class TmuxSession:
    def __init__(
        self,
        sandbox: Sandbox,
        *,
        name: str = "main",
        width: int = 160,
        height: int = 48,
        history: int = 50_000,
        cwd: str | None = None,
        channel: bool | None = None,
    ):
        self.sandbox, self.name, self.width, self.height, self.history, self.cwd = (
            sandbox,
            name,
            width,
            height,
            history,
            cwd,
        )
        self.use_channel = channel_enabled() if channel is None else channel
        self._channel: TmuxChannel | None = None
        self.channel_note = "" if self.use_channel else "off"  # why commands go by exec, when they do
        self._seen = ""  # the last scrollback read: how often a typed text showed before it was typed
        self._echo: tuple[str, int] | None = None  # (tail of the literal text typed last, its count in _seen)

    @property
    def transport(self) -> str:
        """'channel' while commands go over the control-mode channel, else 'exec'."""
        return "channel" if self._channel is not None and self._channel.alive else "exec"

    def _tmux(self, *args: str) -> list[str]:
        return ["tmux", "-S", SOCKET, *args]

    async def _run(self, *commands: Sequence[str], timeout: float = 30.0, effects: bool = False) -> str:
        """Run tmux commands as one command line (stopping at the first error) and return the last
        one's output. `effects`: the commands change the terminal (never re-run when the channel is
        lost in the middle: their fate is unknown)."""
        if self._channel is not None:
            try:
                return await self._channel.run(commands, timeout)
            except TmuxCommandError as e:
                raise SandboxError(f"tmux {commands[0][0]} failed (1): {str(e)[:300]}") from None
            except NotSendableError:
                pass  # this one command by exec; the channel stays
            except ChannelLostError as e:
                self._channel, self.channel_note = None, f"lost: {e}"
                if effects and e.executed is not False:
                    raise SandboxError(
                        f"tmux {commands[0][0]}: the terminal's control channel was lost while the command ran ({e})"
                    ) from None
        return await self._exec(*commands, timeout=timeout)

    async def _exec(self, *commands: Sequence[str], timeout: float = 30.0) -> str:
        """One tmux client exec."""
        result = await self.sandbox.exec(self._tmux(*_client_argv(commands)), timeout=timeout, cwd=self.cwd)
        if result.returncode != 0:
            raise SandboxError(f"tmux {commands[0][0]} failed ({result.returncode}): {result.stderr.strip()[:300]}")
        return result.stdout

    async def start(self) -> None:
        create = (
            ("new-session", "-d", "-s", self.name, "-x", str(self.width), "-y", str(self.height)),
            ("set-option", "-t", self.name, "history-limit", str(self.history)),
        )
        opened = await self._open_channel(create) if self.use_channel else "none"
        if opened == "unknown":  # a client that failed may have left a session behind: start clean
            await self.sandbox.exec(self._tmux("kill-server"), timeout=5)
        if opened in ("none", "unknown"):
            for attempt in range(40):
                try:
                    await self._run(*create)
                    break
                except SandboxError as e:  # met a server still exiting (killed, or left empty by a refused client)
                    if "server exited unexpectedly" not in str(e) or attempt == 39:
                        raise
                    await asyncio.sleep(0.025)
        await self._wait_for_shell()

    async def _wait_for_shell(self, seconds: float = 2.0) -> None:
        """Until the shell has drawn something (its prompt), at most `seconds`: the first screen an
        agent sees, and the keys it types first, must not race the shell's start-up."""
        deadline = asyncio.get_running_loop().time() + seconds
        delay = 0.002
        while (await self.screen()).strip() == "" and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    async def _open_channel(self, create: Sequence[Sequence[str]]) -> str:
        """One control client creates the session exactly as an exec would (the same commands, with
        -d), attaches to it and reports its flags and the window's size, which must be as asked.
        'channel': attached; 'session': the session is made but the client was refused (detached);
        'unknown': it failed, anything may have run; 'none': no channel here (nothing ran)."""
        # the guest's socket as the backend pinned it at start (bwrap: /proc/self/fd/N), never by name
        declared = Capability.GUEST_SOCKET in self.sandbox.capabilities
        guest = cast(WithGuestSocket, self.sandbox).guest_socket if declared else None
        if guest is None:
            self.channel_note = "this sandbox backend has no guest socket"
            return "none"
        probe = ("display-message", "-p", "-t", self.name, "#{client_flags} #{window_width}x#{window_height}")
        commands = [*create, ("attach-session", "-f", CLIENT_FLAGS, "-t", self.name), probe]
        try:
            channel, answer = await TmuxChannel.open(
                guest,
                self._tmux("-C", *_client_argv(commands)),
                self.sandbox.base_env(),
                self.cwd,
                blocks=len(commands),
            )
        except ChannelLostError as e:
            self.channel_note = str(e)
            return "unknown"
        flags, _, size = answer.strip().rpartition(" ")
        if (
            not {"control-mode", "ignore-size", "no-output"} <= set(flags.split(","))
            or size != f"{self.width}x{self.height}"
        ):
            await channel.detach()
            self.channel_note = f"control client not as asked: {answer.strip()[:200]}"
            return "session" if size == f"{self.width}x{self.height}" else "unknown"
        self._channel, self.channel_note = channel, ""
        return "channel"

    async def send_keys(self, keystrokes: str | list[str]) -> None:
        """Type keystrokes. A string is typed literally, its newlines pressed as Enter; a list may mix
        literal text with named keys ("C-c", "Enter", ...). One tmux command line types them all."""
        items = _split_newlines(keystrokes) if isinstance(keystrokes, str) else keystrokes
        commands = [
            ("send-keys", "-t", self.name, item) if item in SPECIAL_KEYS else ("send-keys", "-t", self.name, "-l", item)
            for item in items
            if item
        ]
        if commands:
            last = items[-1] if items and items[-1] else ""
            tail = "" if last in SPECIAL_KEYS else last.rstrip()[-ECHO_TAIL:]
            self._echo = (tail, _joined(self._seen).count(tail)) if tail and tail.isprintable() else None
            await self._run(*commands, effects=True)

    async def wait_for_prompt(self, prompt: str, before: str, seconds: float, lines: int = 2000) -> str | None:
        """After a one-line command was typed: poll until the shell shows `prompt` again below new
        output (the command finished), at most `seconds`. Returns the scrollback (as history_text)
        when it did, None when the time ran out first. `before` is the scrollback before typing."""
        deadline = asyncio.get_running_loop().time() + seconds
        delay = 0.001  # a quick command (`ls`, `cd`) is back within a few ms: look early, then back off
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
        return await self._run(("capture-pane", "-p", "-J", "-t", self.name))

    async def history_text(self, lines: int = 2000) -> str:
        """Scrollback plus screen, up to `lines` lines back."""
        self._seen = await self._run(("capture-pane", "-p", "-J", "-S", f"-{lines}", "-t", self.name))
        return self._seen

    async def settled_history(
        self, quiet: float = 0.02, at_most: float = 0.5, lines: int = 2000, echo_within: float = ECHO_WITHIN
    ) -> str:
        """The scrollback once the echo of the text typed last has arrived and it has not changed for
        `quiet` seconds (waiting at most `at_most` for quiet): the shell echoes typed keys, and prints
        a completion, after send-keys has returned, so a single look can catch half of it, at a moment
        that differs from run to run. Quiet alone is not enough: under CPU load a fresh shell can
        stay silent for longer than `quiet` before it echoes, so the look first waits (at most
        `echo_within`) until the typed text's tail shows once more than it did before it was typed.
        Text typed where nothing echoes (a password prompt) costs that wait."""
        loop = asyncio.get_running_loop()
        text = await self.history_text(lines)
        expected, self._echo = self._echo, None
        if expected is not None:
            tail, before = expected
            until, delay = loop.time() + echo_within, 0.002
            while _joined(text).count(tail) <= before and loop.time() < until:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
                text = await self.history_text(lines)
        deadline = loop.time() + at_most
        while loop.time() < deadline:
            await asyncio.sleep(quiet)
            again = await self.history_text(lines)
            if again == text:
                break
            text = again
        return text

    async def wait_idle(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def run_and_wait(self, command: str, timeout: float = 30.0) -> bool:
        """Type a command and block until it finishes (tmux wait-for), True unless timed out."""
        channel = "agentmill-done"
        await self.send_keys(f"{command}; tmux -S {shlex.quote(SOCKET)} wait-for -S {channel}\n")
        result = await self.sandbox.exec(self._tmux("wait-for", channel), timeout=timeout)
        return not result.timed_out

    async def stop(self) -> None:
        if self._channel is not None:
            await self._channel.detach()
            self._channel = None
        await self.sandbox.exec(self._tmux("kill-server"), timeout=5)


def channel_enabled() -> bool:
    return os.environ.get("AGENTMILL_TMUX_CHANNEL", "1") != "0"


def _joined(text: str) -> str:
    """Scrollback with its line breaks removed: a typed text wraps wherever the screen's width falls."""
    return text.replace("\n", "")


def _client_argv(commands: Sequence[Sequence[str]]) -> list[str]:
    """Commands as one tmux client's arguments: separated by ';', an argument ending in ';' escaped."""
    argv: list[str] = []
    for command in commands:
        argv += [";", *map(_tmux_literal, command)] if argv else list(map(_tmux_literal, command))
    return argv


def _tmux_literal(text: str) -> str:
    """In a client's argv tmux reads an argument ending in ';' as a command separator and one ending
    in '\\;' as text ending in ';' (dropping the backslash): escaped so, text ending in ';'
    (`find ... \\;`) arrives whole. (The channel quotes arguments instead.)"""
    return text[:-1] + "\\;" if text.endswith(";") else text


def last_line(text: str) -> str:
    return text.rstrip("\n").rsplit("\n", 1)[-1]


def prompt_returned(prompt: str, before: str, after: str) -> bool:
    """The screen grew by at least one finished line and its last line is the shell's prompt again."""
    before, after = before.rstrip("\n"), after.rstrip("\n")
    return (
        bool(prompt.strip())
        and after != before
        and "\n" in after
        and last_line(after).rstrip() == prompt.rstrip()
        and (not after.startswith(before) or "\n" in after[len(before) :])
    )


def _split_newlines(text: str) -> list[str]:
    out: list[str] = []
    for i, part in enumerate(text.split("\n")):
        if i:
            out.append("Enter")
        if part:
            out.append(part)
    return out
