"""A persistent channel to the tmux server inside a sandbox: one control-mode client per session.

Why: a tmux client exec costs a guest round trip plus a fresh tmux client process (~7 ms on a
small machine); a command written to a control-mode client that stays attached costs a line each
way on one socket (well under 1 ms).

How: the host opens a connection to the sandbox's guest server and asks it (op "attach",
guest/server.py) to start `tmux -C attach-session -f no-output,ignore-size -t SESSION` with that
very connection as its stdin and stdout. tmux's server then reads our command lines and writes its
answers on our socket directly: no relay process in between. `ignore-size`: the client never
changes the window's size; `no-output`: no %output notifications for what the pane prints. Both
flags exist from tmux 3.2; an older tmux refuses the attach and the caller keeps using execs.

Framing (tmux answers every command with a `%begin T N F` ... `%end T N F` or `%error` block, and
writes notifications between blocks): each request is one line `display-message -p MARK-a ;
COMMANDS ; display-message -p MARK-c`, then a second line `display-message -p MARK-b` (a line
stops at its first error; the second line still runs), MARK a fresh random nonce. tmux runs one
line's commands at once, so nothing comes between MARK-a and MARK-c but their blocks; after an
error, MARK-b ends the answer instead. A command's output is written raw, so a captured screen may
hold a line such as `%end T N 1`: the output block is therefore closed by the LAST guard line that
matches its `%begin`, never the first one.

Trust: everything read here comes from inside the sandbox and is treated as hostile: answers are
bounded (MAX_REPLY), time-limited, and anything unexpected closes the channel (ChannelLostError); the
caller then falls back to client execs, or, when a command with effects may or may not have run,
raises (tmux.py). An agent can kill or detach the client, or flood it: that costs it speed, never
a screen different from what an exec would capture.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Sequence
from pathlib import Path

from agentmill.errors import SandboxError

CLIENT_FLAGS = "no-output,ignore-size"
MAX_REPLY = 16 << 20  # as much as an exec's stdout may carry (Sandbox.exec's max_output)
# What the socket's reader holds while no request runs (it stops reading past twice this): an agent
# that turns the client's output back on and floods it costs the host at most that per session.
READ_BUFFER = 1 << 20
OPEN_TIMEOUT = 30.0  # the client starts tmux's server and the session: as long as an exec may take
_GUARDS = (b"%end ", b"%error ")


class ChannelLostError(SandboxError):
    """The control client is gone or its answer broke. `executed`: False when the command was
    never written; None when it was written and its outcome is unknown."""

    def __init__(self, reason: str, executed: bool | None = None):
        super().__init__(reason)
        self.executed = executed


class TmuxCommandError(SandboxError):
    """tmux answered a command with %error; the message is tmux's own."""


class ReplyTooLargeError(SandboxError):
    """More than MAX_REPLY bytes without the answer's end (a flood, or a capture over the limit)."""


class NotSendableError(SandboxError, ValueError):
    """An argument that cannot travel on one command line (a newline, a NUL, unencodable text)."""


def quote(arg: str) -> str:
    """One argument for tmux's command parser, taken whole and literally: inside single quotes
    nothing is special (`;`, `#`, `$`, `~`, `{`, `\\`); a single quote itself goes between them, escaped."""
    if "\n" in arg or "\0" in arg:
        raise NotSendableError("newline or NUL in a tmux argument")
    return "'" + arg.replace("'", "'\\''") + "'"


def request_lines(commands: Sequence[Sequence[str]], nonce: str) -> bytes:
    """The two lines of one request (see the module's docstring)."""
    line = " ; ".join(
        [
            f"display-message -p agentmill-{nonce}-a",
            *(" ".join(map(quote, c)) for c in commands),
            f"display-message -p agentmill-{nonce}-c",
        ]
    )
    try:
        return f"{line}\ndisplay-message -p agentmill-{nonce}-b\n".encode()
    except UnicodeEncodeError as e:  # a lone surrogate: the exec path decides what to do with it
        raise NotSendableError(str(e)) from None


def parse_reply(data: bytes, nonce: str, n_commands: int) -> str:
    """The output of the request's commands (the last one's; '' when it printed nothing) from the
    bytes read up to and including the end mark's block. Raises TmuxCommandError on %error and
    ChannelLostError when the answer is not shaped as tmux shapes it."""
    lines = data.split(b"\n")
    begin, after, end = (f"agentmill-{nonce}-{m}".encode() for m in "acb")
    try:
        ia = lines.index(begin)
        ib = lines.index(end, ia + 1)
    except ValueError:
        raise ChannelLostError("tmux control answer without its marks") from None
    # no error: the first line answered whole, at once (nothing can come between its blocks), up to
    # its closing mark; after an error that mark is missing and the second line's mark ends it
    ic = lines.index(after, ia + 1, ib) if after in lines[ia + 1 : ib] else ib
    if not (
        ia >= 1
        and lines[ia - 1].startswith(b"%begin ")
        and lines[ia + 1].startswith(b"%end ")
        and lines[ic - 1].startswith(b"%begin ")
    ):
        raise ChannelLostError("tmux control answer out of shape")
    region = lines[ia + 2 : ic - 1]  # between the opening mark's block and the closing one's
    output: list[bytes] = []
    blocks, i = 0, 0
    while i < len(region):
        line = region[i]
        if not line.startswith(b"%begin "):  # a notification between blocks
            i += 1
            continue
        guard = line[len(b"%begin ") :]
        closes = [j for j in range(i + 1, len(region)) if region[j] in (b"%end " + guard, b"%error " + guard)]
        if not closes:
            raise ChannelLostError("tmux control block without its end")
        blocks += 1
        # only the last command may print; its output may hold forged guard lines: its block ends at the last one
        close = closes[-1] if blocks == n_commands else closes[0]
        output = region[i + 1 : close]
        if region[close].startswith(b"%error "):
            raise TmuxCommandError(b"\n".join(output).decode("utf-8", "replace").strip())
        i = close + 1
        if blocks == n_commands:
            break
    if blocks != n_commands:
        raise ChannelLostError(f"tmux answered {blocks} of {n_commands} commands")
    return (b"\n".join(output) + b"\n").decode("utf-8", "replace") if output else ""


class TmuxChannel:
    """One attached control-mode client; requests run one at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader, self._writer = reader, writer
        self._lock = asyncio.Lock()
        self._pending = bytearray()  # read past the last answer (notifications): the next one starts here
        self.lost: str | None = None  # why it is closed, once it is

    @classmethod
    async def open(
        cls, guest_socket: Path, argv: list[str], env: dict[str, str], cwd: str | None, blocks: int = 1
    ) -> tuple[TmuxChannel, str]:
        """Start the control client through the guest (`argv`: tmux -C and the commands it runs
        first, the attach among them) and wait for the answers to those `blocks` commands. Returns
        the channel and the last command's output; ChannelLostError (executed=False) with the reason when
        a command failed or the client did not stay."""
        try:
            reader, writer = await asyncio.open_unix_connection(str(guest_socket), limit=READ_BUFFER)
        except OSError as e:
            raise ChannelLostError(f"guest unreachable: {e}", executed=False) from None
        channel = cls(reader, writer)
        try:
            writer.write(json.dumps({"op": "attach", "argv": argv, "env": env, "cwd": cwd}).encode() + b"\n")
            ok, text = await asyncio.wait_for(channel._first_answers(blocks), OPEN_TIMEOUT)
        except (TimeoutError, OSError, ValueError, asyncio.IncompleteReadError, ChannelLostError) as e:
            ok, text = False, _why(e)
        if not ok:
            raise ChannelLostError(channel.close(f"attach failed: {text}"), executed=False)
        return channel, text

    async def _first_answers(self, blocks: int) -> tuple[bool, str]:
        """The blocks of the commands the client was started with (notifications between them
        skipped): (True, the last one's output) or (False, the reason)."""
        body: list[bytes] = []
        for _ in range(blocks):
            line = b""
            while not line.startswith(b"%begin "):
                line = await self._reader.readline()
                if line.startswith(b"{"):  # the guest's error reply: the client could not be started
                    return False, str(json.loads(line).get("error", "guest error"))[:300]
                if not line:
                    return False, "the tmux client exited"
            body = []
            while True:
                line = await self._reader.readline()
                if not line:
                    return False, "the tmux client exited"
                if line.startswith(_GUARDS):
                    break
                if len(body) > 100:  # these commands print a line or an error message
                    return False, "answer out of shape"
                body.append(line)
            if line.startswith(b"%error "):
                return False, b"".join(body).decode("utf-8", "replace").strip()[:300]
        return True, b"".join(body).decode("utf-8", "replace")

    @property
    def alive(self) -> bool:
        return self.lost is None and not self._reader.at_eof()

    async def run(self, commands: Sequence[Sequence[str]], timeout: float) -> str:
        """Run the commands as one tmux command line (they stop at the first error); return the
        last one's output. TmuxCommandError, ChannelLostError, NotSendableError (nothing was written)."""
        nonce = secrets.token_hex(16)
        payload = request_lines(commands, nonce)
        async with self._lock:
            if not self.alive:
                raise ChannelLostError(self.close("the control client exited"), executed=False)
            try:
                self._writer.write(payload)
                data = await asyncio.wait_for(self._read_reply(nonce), timeout)
            except (TimeoutError, OSError, ValueError, asyncio.IncompleteReadError, ReplyTooLargeError) as e:
                raise ChannelLostError(self.close(_why(e)), executed=None) from None
        try:
            return parse_reply(data, nonce, len(commands))
        except ChannelLostError as e:
            self.close(str(e))
            e.executed = None
            raise

    async def _read_reply(self, nonce: str) -> bytes:
        """Everything up to the end mark's own %end line; what was read past it is kept for the next."""
        mark = f"\nagentmill-{nonce}-b\n".encode()
        buf, self._pending = self._pending, bytearray()
        searched, at = 0, -1
        while True:
            if at < 0:
                at = buf.find(mark, max(0, searched - len(mark)))
            if at >= 0:
                eol = buf.find(b"\n", at + len(mark))
                if eol >= 0:
                    self._pending = buf[eol + 1 :]
                    return bytes(buf[: eol + 1])
            searched = len(buf)
            if searched > MAX_REPLY:
                raise ReplyTooLargeError()
            chunk = await self._reader.read(1 << 16)
            if not chunk:
                raise asyncio.IncompleteReadError(bytes(buf), None)
            buf += chunk

    async def detach(self, timeout: float = 2.0) -> None:
        """Leave politely: ask tmux to detach this client and wait for the end of the stream, then
        close. (Only closing our end can leave the client and a tmux server told to exit waiting on
        each other for seconds, refusing every new client meanwhile.)"""
        if self.alive:
            async with self._lock:
                with contextlib.suppress(Exception):
                    self._writer.write(b"detach-client\n")
                    await asyncio.wait_for(self._drain_to_end(), timeout)
        self.close("detached")

    async def _drain_to_end(self) -> None:
        read = 0
        while read <= MAX_REPLY and (chunk := await self._reader.read(1 << 16)):
            read += len(chunk)

    def __del__(self) -> None:  # a session dropped without stop() (its sandbox gone): release the socket
        self.close("dropped")

    def close(self, reason: str = "closed") -> str:
        """Close our end: tmux then drops the client. Idempotent; the first reason is kept (returned)."""
        if self.lost is None:
            self.lost = reason
        with contextlib.suppress(Exception):
            self._writer.close()
        return self.lost


def _why(e: BaseException) -> str:
    if isinstance(e, asyncio.TimeoutError):
        return "no answer in time"
    if isinstance(e, asyncio.IncompleteReadError):
        return "the control client exited (end of stream)"
    if isinstance(e, ReplyTooLargeError):
        return f"no answer within {MAX_REPLY >> 20} MiB"
    if isinstance(e, ValueError):
        return "malformed answer"
    return f"{type(e).__name__}: {e}"
