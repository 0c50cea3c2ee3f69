"""One writer per run folder: an flock on `run.lock`, which records the holder's pid and host.

A second `agentmill rollout` on the same folder would otherwise sweep the first one's half-written
trial folders and run its in-flight trials again. The kernel drops the lock when the holder dies
(even by kill -9), so a stale file never blocks a resume; its text only serves the refusal message.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from agentmill.errors import AgentmillError

LOCK_NAME = "run.lock"


class RunLockedError(AgentmillError):
    """Another process holds the run folder."""


class RunLock:
    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunLockedError(busy_message(self.path)) from None
        holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode() + b"\n", 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def probe(run_dir: Path) -> None:
    """Raise RunLockedError now if another process holds the folder (checked before costly start-up)."""
    if (run_dir / LOCK_NAME).exists():
        RunLock(run_dir).acquire().release()


def busy_message(path: Path) -> str:
    try:
        holder = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        holder = {}
    who = f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}"
    since = holder.get("since")
    when = f", since {time.strftime('%H:%M:%S', time.localtime(since))}" if since else ""
    return (
        f"{path.parent}: another agentmill rollout is using this run folder ({who}{when}); "
        f"wait for it to finish or stop it, or use another --out folder"
    )


def live_holder(run_dir: Path) -> int | None:
    """The pid of a live process on this host that holds the folder, read without taking the lock
    (`status` must never stand in a starting run's way). A stale file of a dead process gives None."""
    try:
        holder = json.loads((Path(run_dir) / LOCK_NAME).read_text() or "{}")
        pid = int(holder["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if holder.get("host") != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        return pid
    return pid if _holds_lock(pid, Path(run_dir) / LOCK_NAME) else None


def _holds_lock(pid: int, path: Path) -> bool:
    """Whether `pid` still has the lock file open (a reused pid of an unrelated process does not)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        target = str(path.resolve())
        entries = list(fds.iterdir())
    except OSError:
        return fds.parent.exists()  # no /proc access: trust the pid
    return any(_link(fd) == target for fd in entries)


def _link(fd: Path) -> str | None:
    # a descriptor closed since the listing (the listing's own, when a process looks at itself) is gone
    try:
        return os.readlink(fd)
    except OSError:
        return None
