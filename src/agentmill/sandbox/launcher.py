"""Sandboxes started by a launcher process, not by the event loop's own process.

A sandbox used to start as a chain of programs vfork-exec'd from the event loop's thread: `sh` to
join its cgroups, `prlimit`, `setpriv`, then bwrap. CPython holds the GIL through the whole vfork
and exec, so every start stopped the loop (about 7% of its thread's time with 256 episodes in
flight, benchmarks/inflight.py), and the three programs' start-up cost CPU each time.

Now each agentmill process starts one launcher (launcher_server.py, a small Python of the
standard library) at the base priority, once, and sends it a plan per sandbox over a socket: argv,
env, the cgroups to join, rlimits, the uid to drop to, and the stdio fds. The launcher forks, does
those steps in the child and execs bwrap; the loop only sends one message and reads the answer.
The answer brings the new process's pidfd, so signals never reach a reused pid, and its exit
status, once the launcher has reaped it.

AGENTMILL_LAUNCHER=0 goes back to the chain of programs (bwrap.launch_argv), as does a host without
pidfds (Linux < 5.3).
"""

from __future__ import annotations

import array
import asyncio
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError, SandboxError
from agentmill.runtime.child_processes import at_base
from agentmill.runtime.loop_priority import children_nice

LAUNCHER_ENV = "AGENTMILL_LAUNCHER"
SERVER = Path(__file__).with_name("launcher_server.py")
DROP_STEPS = ["groups", "bounding", "inheritable"]  # with the uid: what setpriv did


@dataclass
class LaunchPlan:
    """What the launcher does in the new process before it execs argv."""

    argv: list[str]
    env: dict[str, str]
    cgroups: list[str] = field(default_factory=list)  # cgroup.procs files to join
    rlimits: dict[str, int] = field(default_factory=dict)  # nproc, nofile, fsize, core, as
    uid: int | None = None  # drop to this uid and gid (as root)
    drop: list[str] = field(default_factory=lambda: list(DROP_STEPS))
    new_session: bool = True
    nice: int | None = field(default_factory=children_nice)  # the calling thread's base, not the launcher's


def launcher_wanted() -> bool:
    raw = os.environ.get(LAUNCHER_ENV, "1").strip()
    if raw not in ("0", "1"):
        raise AgentmillError(f"{LAUNCHER_ENV}={raw!r}: expected 1 (the launcher) or 0 (a chain of programs)")
    return raw == "1" and hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


class _Launcher:
    """The launcher of this process: its control socket and its process."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setblocking(False)
        self.proc = subprocess.Popen(
            at_base((sys.executable, "-I", "-S", str(SERVER), str(theirs.fileno()))),
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        theirs.close()
        self.sock, self.pid = ours, os.getpid()


_launcher: _Launcher | None = None
_lock = threading.Lock()


def _current(dead: _Launcher | None = None) -> _Launcher:
    """This process's launcher, started on first use and again if it died (or we are a fork).
    `dead`: one found gone, whose exit its process table entry may not show yet."""
    global _launcher
    with _lock:
        if _launcher is None or _launcher is dead or _launcher.pid != os.getpid() or _launcher.proc.poll() is not None:
            if _launcher is not None and _launcher.pid == os.getpid():
                _launcher.sock.close()
            _launcher = _Launcher()
        return _launcher


async def launch(
    plan: LaunchPlan, *, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
) -> LaunchedProcess:
    """Start plan.argv through the launcher. stdin/stdout/stderr: an fd, a file, DEVNULL, or (for
    stdout and stderr) PIPE, read through the returned process's StreamReaders."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    passed, readers = [theirs.fileno()], {}
    close_after: list[socket.socket | int] = [theirs]
    try:
        for name, spec in (("stdin", stdin), ("stdout", stdout), ("stderr", stderr)):
            if spec == subprocess.PIPE and name == "stdin":
                raise ValueError("the launcher gives a process no stdin pipe; pass an fd")
            if spec == subprocess.PIPE:
                r, w = os.pipe2(os.O_CLOEXEC)
                readers[name] = r
                close_after.append(w)
                passed.append(w)
            elif spec == subprocess.DEVNULL:
                fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
                close_after.append(fd)
                passed.append(fd)
            else:
                passed.append(spec if isinstance(spec, int) else spec.fileno())
        request, used = json.dumps(vars(plan)).encode(), _current()  # plain values: no deep copy (asdict)
        try:
            await _send(loop, used.sock, request, passed)
        except BrokenPipeError:  # it died since its last launch: once more, with a new one
            try:
                await _send(loop, _current(dead=used).sock, request, passed)
            except BrokenPipeError as e:
                raise SandboxError(f"the launcher is gone ({e})") from None
    except BaseException:
        for fd in readers.values():
            os.close(fd)
        ours.close()
        raise
    finally:
        for x in close_after:
            x.close() if isinstance(x, socket.socket) else os.close(x)
    receiving = asyncio.ensure_future(_receive(loop, ours))
    try:
        answer, fds = await asyncio.shield(receiving)
    except BaseException:
        # Cancelled mid-start: the process still comes, so it is killed as soon as it does.
        receiving.add_done_callback(lambda done: _kill_unowned(done, ours, list(readers.values())))
        raise
    if "pid" not in answer or len(fds) != 1:
        ours.close()
        for fd in [*fds, *readers.values()]:
            os.close(fd)
        raise SandboxError(f"the launcher could not start {plan.argv[0]}: {answer.get('error', answer)}")
    proc = LaunchedProcess(loop, answer["pid"], fds[0], ours)
    try:
        for name in list(readers):
            setattr(proc, name, await _stream(loop, readers.pop(name)))
    except BaseException:  # cancelled here too: nobody would own it
        proc.kill()
        for fd in readers.values():
            os.close(fd)
        raise
    return proc


class LaunchedProcess:
    """What asyncio's Process gives that agentmill uses: pid, returncode, wait(), signals, and
    stdout/stderr readers for pipes. Its exit comes from the launcher, which reaped it."""

    stdin = None

    def __init__(self, loop: asyncio.AbstractEventLoop, pid: int, pidfd: int, answers: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._loop, self._answers = loop, answers
        self._pidfd: int | None = pidfd
        self._exited = loop.create_future()
        loop.add_reader(answers.fileno(), self._on_answer)

    def _on_answer(self) -> None:
        try:
            data = self._answers.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        code = json.loads(data).get("exit", 255) if data else 255  # no answer: the launcher died with it
        self._loop.remove_reader(self._answers.fileno())
        self._answers.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
        self._pidfd = None
        self.returncode = code
        if not self._exited.done():
            self._exited.set_result(code)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def send_signal(self, sig: int) -> None:
        if self._pidfd is not None:  # still ours: the launcher has not reaped it
            try:
                signal.pidfd_send_signal(self._pidfd, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _kill_unowned(received: asyncio.Future, ours: socket.socket, readers: list[int]) -> None:
    """The process of a launch whose caller has gone: its group killed, our ends closed."""
    fds = []
    if not received.cancelled() and received.exception() is None:
        answer, fds = received.result()
        if "pid" in answer:
            for kill in (
                lambda: signal.pidfd_send_signal(fds[0], signal.SIGKILL),
                lambda: os.killpg(answer["pid"], signal.SIGKILL),
            ):  # an overlay's daemon too
                try:
                    kill()
                except (OSError, IndexError):
                    pass
    ours.close()
    for fd in [*fds, *readers]:
        os.close(fd)


async def _send(loop: asyncio.AbstractEventLoop, sock: socket.socket, data: bytes, fds: list[int]) -> None:
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
    while True:
        try:
            sock.sendmsg([data], ancillary)
            return
        except BlockingIOError:  # the launcher is behind: wait until it has read some
            await _room(loop, sock)
        except (ConnectionResetError, ConnectionRefusedError) as e:
            raise SandboxError(f"the launcher is gone ({e})") from None
        except OSError as e:
            if e.errno == errno.EBADF:  # closed under us: another launch found the launcher dead
                raise BrokenPipeError(errno.EPIPE, "the launcher was replaced") from None
            if e.errno != errno.EMSGSIZE:
                raise
            # one message carries one plan: a socket takes at most its send buffer (about 200 KiB)
            raise SandboxError(
                f"a launch plan of {len(data)} bytes (argv and env) is more than the launcher's "
                f"socket carries ({sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)} bytes); "
                f"{LAUNCHER_ENV}=0 starts sandboxes without it"
            ) from None


async def _receive(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> tuple[dict, list[int]]:
    space = socket.CMSG_SPACE(array.array("i").itemsize)
    while True:
        try:
            data, ancillary, _, _ = sock.recvmsg(4096, space)
            break
        except BlockingIOError:
            await _readable(loop, sock)
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        raise SandboxError("the launcher is gone (no answer)")
    return json.loads(data), list(fds)


# (loop, fd) -> the one wait for room that every sender blocked on that socket shares: a loop keeps
# one writer callback per fd, so a second add_writer would silently replace the first sender's wake.
_room_waits: dict[tuple[int, int], asyncio.Future] = {}
ROOM_RECHECK = 1.0  # s: a socket closed while we wait (its launcher replaced) never says it has room


async def _room(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    """Until the launcher's socket may have room again, shared by all the senders waiting on it."""
    key = (id(loop), sock.fileno())
    wait = _room_waits.get(key)
    if wait is None or wait.done():
        wait = _room_waits[key] = loop.create_future()
        loop.add_writer(key[1], _wake, loop, key, wait)
    try:
        await asyncio.wait_for(asyncio.shield(wait), ROOM_RECHECK)  # shield: one sender cancelled, not all
    except TimeoutError:
        _wake(loop, key, wait)  # everyone tries again; a closed socket then says so


def _wake(loop: asyncio.AbstractEventLoop, key: tuple[int, int], wait: asyncio.Future) -> None:
    loop.remove_writer(key[1])
    if _room_waits.get(key) is wait:
        del _room_waits[key]
    if not wait.done():
        wait.set_result(None)


async def _readable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    """Until a launch's own answer socket can be read (it has one reader: the launch itself)."""
    ready = loop.create_future()
    loop.add_reader(sock.fileno(), lambda: None if ready.done() else ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())


async def _stream(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(fd, "rb", 0))
    return reader
