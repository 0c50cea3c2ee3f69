"""One command as a sandbox's whole life: no guest exec server.

A sandbox that only runs one command (the verifier's test script, the oracle's solution) does not
need the guest server: booting its Python is about half of a sandbox's CPU (11 ms against 23 ms per
start+exec+stop, measured in benchmarks/sandbox.py). Here bwrap's first process is a small
supervisor shell from the read-only /usr that runs the command with the requested environment,
stdin /dev/null, stdout and stderr to the host's pipes (the first `max_output` bytes kept).

The supervisor reports on its own stdin, a pipe the host reads and the command never inherits:
`s` once the sandbox is set up (no `s`: the sandbox failed to start, not the command), `x` the
moment the command has exited, `e` as it exits itself. When the command leaves processes behind,
the supervisor keeps the sandbox up for `linger` seconds first; its exit takes them with it
(bwrap's init ends the pid namespace). So the host can read what the command left (`at_exit`, on
`x`) and again once everything is dead: a rewrite in between is a leftover process at work
(verify/test_script.py). Anything but exactly `sxe` means a process in the sandbox killed the
supervisor or forged or took its marks: `CommandResult.marks` carries what came.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from agentmill.errors import SandboxError, SandboxStartError
from agentmill.sandbox.bwrap import START_TIMEOUT
from agentmill.sandbox.protocol import Capability, ExecResult, SandboxSpec, WithOneCommand
from agentmill.sandbox.registry import create_sandbox

# $1 the linger in seconds, then the command. The glob counts /proc's pids without a fork: bwrap's
# init and this shell are 2; more are the command's leftovers.
_SUPERVISE = """linger=$1; shift
printf s >&0
"$@" </dev/null
rc=$?
printf x >&0
set -- /proc/[0-9]*
[ $# -le 2 ] || [ "$linger" = 0 ] || /usr/bin/sleep "$linger" </dev/null
printf e >&0
exit $rc
"""
SHELL = "/usr/bin/sh"  # the sandbox's read-only /usr: never a file of the agent's root
_SETTLE = 0.2  # seconds to collect output still in the pipes after the sandbox is gone
_MARK_WAIT = 5.0  # seconds past the linger a supervisor gets to exit after its command did


@dataclass
class CommandResult(ExecResult):
    marks: str = "sxe"  # what the supervisor reported: exactly "sxe" unless something interfered


async def run_command(
    spec: SandboxSpec,
    argv: list[str],
    *,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    max_output: int = 16 << 20,
    linger: float = 0.0,
    at_exit: Callable[[], Awaitable[None]] | None = None,
    backend: str | None = None,
) -> CommandResult:
    """Run `argv` in a fresh sandbox of `spec` as its only job, then stop the sandbox.

    SandboxStartError when the sandbox failed to start; a timeout kills the sandbox and sets
    `timed_out`. `at_exit` is awaited once the command has exited, while leftovers may still run."""
    sb = create_sandbox(spec, backend=backend)
    if Capability.ONE_COMMAND not in sb.capabilities:  # a backend without the one-command mode: its guest runs it
        return await _through_guest(sb, argv, timeout=timeout, env=env, cwd=cwd, max_output=max_output, at_exit=at_exit)
    full_env = sb.base_env()
    full_env.update(env or {})
    started = time.monotonic()
    marks_r, marks_w = os.pipe()
    try:
        proc = await cast(WithOneCommand, sb).start_command(
            [SHELL, "-c", _SUPERVISE, "sh", f"{linger:g}", *argv], full_env, cwd or spec.workdir, stdin=marks_w
        )
    except Exception as e:  # no free uid, a failed chown or cgroup, bwrap missing: never the command's doing
        os.close(marks_r)
        raise SandboxStartError(f"sandbox failed to start: {e}") from e
    except BaseException:
        os.close(marks_r)
        raise
    finally:
        os.close(marks_w)
    out, err = bytearray(), bytearray()
    assert proc.stdout is not None and proc.stderr is not None  # start_command pipes both
    readers = [
        asyncio.ensure_future(_read_capped(proc.stdout, out, max_output)),
        asyncio.ensure_future(_read_capped(proc.stderr, err, max_output)),
    ]
    marks = _Marks(marks_r)
    timed_out = False
    try:
        if not await marks.wait_for("s", proc, START_TIMEOUT):
            await asyncio.wait(readers, timeout=_SETTLE)  # bwrap's own complaint, whole
            if proc.returncode is None:
                raise SandboxStartError(
                    f"sandbox did not start within {START_TIMEOUT:.0f}s: {_text(err).strip()[-2000:]}"
                )
            raise SandboxStartError(
                f"sandbox failed to start: {_text(err).strip()[-2000:] or f'exit {proc.returncode}'}"
            )
        if await marks.wait_for("x", proc, timeout):
            if at_exit is not None:
                await at_exit()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), linger + _MARK_WAIT)
        elif proc.returncode is None:
            timed_out = True
    finally:
        await sb.stop()  # kills whatever is left; the pipes close
        marks.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*readers), _SETTLE)
        for task in readers:
            task.cancel()
    assert proc.returncode is not None  # stop() has reaped the sandbox's first process
    returncode = -9 if timed_out else proc.returncode
    return CommandResult(
        returncode=returncode,
        stdout=_text(out[:max_output]),
        stderr=_text(err[:max_output]),
        timed_out=timed_out,
        duration=time.monotonic() - started,
        marks=marks.seen,
    )


class _Marks:
    """The supervisor's marks, read from its stdin pipe by the event loop."""

    def __init__(self, fd: int):
        self.fd, self.seen = fd, ""
        self._changed = asyncio.Event()
        os.set_blocking(fd, False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            data = os.read(self.fd, 64)
        except BlockingIOError:
            return
        if not data:  # every holder closed it: the sandbox is gone
            self._loop.remove_reader(self.fd)
        self.seen += data[:64].decode("ascii", "replace")
        self._changed.set()

    async def wait_for(self, mark: str, proc, timeout: float | None) -> bool:
        """Whether `mark` came before the process exited or the timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        exited = asyncio.ensure_future(proc.wait())
        try:
            while mark not in self.seen:
                if exited.done():
                    await asyncio.sleep(0)  # a mark written just before the exit is already readable
                    self._read()
                    return mark in self.seen
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.clear()
                changed = asyncio.ensure_future(self._changed.wait())
                await asyncio.wait({changed, exited}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
            return True
        finally:
            if not exited.done():
                exited.cancel()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._read()
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self.fd)
        os.close(self.fd)


async def _read_capped(stream: asyncio.StreamReader, buf: bytearray, limit: int) -> None:
    """Keep the first `limit` bytes; read on past them so the writer never blocks."""
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        if len(buf) < limit:
            buf += chunk


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


async def _through_guest(sb, argv, *, timeout, env, cwd, max_output, at_exit) -> CommandResult:
    async with sb:
        run = await sb.exec(argv, timeout=timeout, env=env, cwd=cwd, max_output=max_output)
        if at_exit is not None and not run.timed_out:
            await at_exit()
    return CommandResult(
        returncode=run.returncode,
        stdout=run.stdout,
        stderr=run.stderr,
        timed_out=run.timed_out,
        duration=run.duration,
        marks="s" if run.timed_out else "sxe",
    )


class OneCommandSandbox:
    """A sandbox whose whole life is its first exec: nothing starts before it, and the sandbox is
    gone when it returns. For agents whose run is at most one command (the oracle's solution, the
    nop's nothing): the trial hands them this instead of a guest-served sandbox. Any other use is
    a SandboxError that says so."""

    capabilities: frozenset[str] = frozenset()

    def __init__(self, spec: SandboxSpec, *, backend: str | None = None):
        self.spec, self._backend, self._used = spec, backend, False

    async def start(self) -> None:
        """Nothing to start: the first exec starts (and ends) the sandbox."""

    async def stop(self) -> None:
        """Nothing left running: the exec's sandbox stopped as it returned."""

    async def __aenter__(self) -> OneCommandSandbox:
        return self

    async def __aexit__(self, *exc) -> None:
        return None

    async def exec(
        self, cmd, *, timeout=None, env=None, cwd=None, stdin=None, max_output: int = 16 << 20
    ) -> ExecResult:
        if self._used or stdin is not None:
            raise SandboxError(
                "a one-command sandbox runs one command, without stdin: this agent must not declare runs_one_command"
            )
        self._used = True
        argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return await run_command(
            self.spec, argv, timeout=timeout, env=env, cwd=cwd, max_output=max_output, backend=self._backend
        )

    def base_env(self) -> dict[str, str]:
        return create_sandbox(self.spec, backend=self._backend).base_env()

    async def read_file(self, path: str, max_bytes: int = 16 << 20) -> bytes:
        raise SandboxError("a one-command sandbox has no files to read after its command")

    async def write_file(self, path: str, data, mode: int = 0o644) -> None:
        raise SandboxError("a one-command sandbox takes no files before its command")

    def adopt(self, path) -> None:
        raise SandboxError("a one-command sandbox adopts no files")
