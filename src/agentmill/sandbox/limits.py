"""Resource limits: cgroups (v1 or v2) where this process may write them, rlimits always.

Measured here: cgroup v1 memory and pids hierarchies are writable by root; inside unprivileged
containers they are not, so rlimits are the floor that always applies.

Every sandbox also gets a cgroup v2 group when the unified hierarchy is writable (the main group on
a v2 host, a controller-less one under /sys/fs/cgroup/unified on a hybrid v1 host): its
`cgroup.kill` kills every process in it at once, forks racing the kill included, and its
`cgroup.events` says when the last one is gone, so stop waits for exactly that and no longer.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from pathlib import Path

from agentmill.sandbox.protocol import Limits

_ROOT = Path("/sys/fs/cgroup")
_GROUP = "agentmill"


_swept = False


def sweep_stale_groups() -> None:
    """Remove groups left by agentmill processes that died (kill -9): their pid suffix is gone."""
    for parent in [_ROOT / _GROUP, *(_ROOT / c / _GROUP for c in ("memory", "pids", "cpu", "unified"))]:
        if not parent.is_dir():
            continue
        for group in parent.iterdir():
            pid = group.name.rsplit("-", 1)[-1]
            if not group.is_dir() or not pid.isdigit() or Path(f"/proc/{pid}").exists():
                continue
            stale = Cgroup.__new__(Cgroup)
            stale.paths = [group]
            stale.kill_all(wait=1.0)
            stale.remove()


class Cgroup:
    """One sandbox's cgroup(s). `paths` is empty when cgroups are not writable here."""

    tracker: Path | None = None  # the v2 group with cgroup.kill and cgroup.events, if any

    def __init__(self, name: str, limits: Limits):
        global _swept
        if not _swept:
            _swept = True
            with contextlib.suppress(OSError):
                sweep_stale_groups()
        self.paths: list[Path] = []
        v2 = _ROOT / "cgroup.controllers"
        if v2.exists():
            self._make(
                _ROOT / _GROUP / name,
                {
                    "memory.max": str(limits.memory_mb << 20),
                    "memory.swap.max": "0",
                    "pids.max": str(limits.pids),
                    "cpu.max": f"{int(limits.cpus * 100_000)} 100000",
                },
                parent_controllers=True,
            )
            self._track(_ROOT / _GROUP / name)
        else:
            self._make(
                _ROOT / "memory" / _GROUP / name,
                {
                    "memory.limit_in_bytes": str(limits.memory_mb << 20),
                    "memory.memsw.limit_in_bytes": str(limits.memory_mb << 20),
                },
            )
            self._make(_ROOT / "pids" / _GROUP / name, {"pids.max": str(limits.pids)})
            self._make(
                _ROOT / "cpu" / _GROUP / name,
                {
                    "cpu.cfs_period_us": "100000",
                    "cpu.cfs_quota_us": str(int(limits.cpus * 100_000)),
                },
            )
            if (_ROOT / "unified" / "cgroup.procs").exists():  # hybrid host: v2 only to track and kill
                self._make(_ROOT / "unified" / _GROUP / name, {})
                self._track(_ROOT / "unified" / _GROUP / name)

    def _track(self, path: Path) -> None:
        if path in self.paths and (path / "cgroup.kill").exists():  # cgroup.kill: kernel 5.14+
            self.tracker = path

    def _make(self, path: Path, settings: dict[str, str], parent_controllers: bool = False) -> None:
        try:
            if parent_controllers:
                path.parent.mkdir(exist_ok=True)
                with contextlib.suppress(OSError):
                    (path.parent / "cgroup.subtree_control").write_text("+memory +pids +cpu")
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        for key, value in settings.items():
            with contextlib.suppress(OSError):  # a missing knob (no swap accounting) is not fatal
                (path / key).write_text(value)
        self.paths.append(path)

    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.paths]

    def kill_all(self, wait: float = 5.0) -> bool:
        """SIGKILL every process left in the group; True once none remain."""
        deadline = time.monotonic() + wait
        if self.tracker is not None and self._kill_tracked(self.tracker, deadline) and not self.pids():
            return True
        while True:  # no v2 group (or it failed): kill what the groups list until they are empty
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)  # exiting processes leave the group within a millisecond or two

    def _kill_tracked(self, tracker: Path, deadline: float) -> bool:
        """cgroup.kill, then wait on cgroup.events for 'populated 0'; False if that did not happen."""
        try:
            (tracker / "cgroup.kill").write_text("1")
            return wait_unpopulated(tracker / "cgroup.events", deadline)
        except OSError:
            return False

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.paths:
            with contextlib.suppress(OSError):
                found |= {int(x) for x in (path / "cgroup.procs").read_text().split()}
        return found

    def remove(self) -> None:
        for path in self.paths:
            with contextlib.suppress(OSError):
                path.rmdir()
        self.paths = []


def wait_unpopulated(events: Path, deadline: float) -> bool:
    """Block until a v2 group's cgroup.events reads 'populated 0' (True) or the deadline (False).

    A change of the file's values wakes a poll() for POLLPRI on it (the kernel's file-modified
    notification), so this sleeps until the last process has left instead of polling the group.
    """
    with open(events, "rb", buffering=0) as f:
        poller = select.poll()
        poller.register(f, select.POLLPRI)
        while True:
            f.seek(0)
            if b"populated 0" in f.read():  # reading also re-arms the notification
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            poller.poll(min(left, 0.1) * 1000)  # the cap only bounds a wake-up that never comes


def rlimit_values(limits: Limits, *, address_space: bool = True) -> dict[str, int]:
    """The limits that hold even where cgroups cannot be written, by prlimit's names.

    The address-space cap is the memory limit plus 1 GiB of headroom for reserved-but-unused
    mappings, so a single allocation larger than the limit fails at once instead of swapping.
    """
    values = {"nproc": limits.pids, "nofile": limits.nofile, "fsize": limits.storage_mb << 20, "core": 0}
    if address_space:
        values["as"] = (limits.memory_mb + 1024) << 20
    return values


def prlimit_args(limits: Limits, *, address_space: bool = True) -> list[str]:
    """The same as prlimit flags."""
    return [f"--{name}={value}" for name, value in rlimit_values(limits, address_space=address_space).items()]
