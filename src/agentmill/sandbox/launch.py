"""How a sandbox's first process is set up before it becomes bwrap: in the child of our own fork.

It used to be an exec chain, `sh` (join the cgroups) -> `prlimit` (rlimits) -> `setpriv` (drop to
the sandbox's uid) -> bwrap: three program start-ups per sandbox. The child now makes the same
system calls itself and execs bwrap directly. Order matters and is the chain's: cgroups first
(root may write cgroup.procs), then rlimits (root may set any value), then, still as root, the
capability bounding set and the inheritable set are cleared, and last the uid, gid and groups
become the sandbox's (which also empties the permitted, effective and ambient sets).

It runs as subprocess's `preexec_fn`, between fork and exec, so it only makes system calls on
objects made beforehand: no imports, no Python locks, no logging. A failure is written to the
child's stderr (the sandbox's stderr file, which start() reports) and the child exits 126.
"""

from __future__ import annotations

import ctypes
import os
import resource
from pathlib import Path

_PR_CAPBSET_DROP = 24
_CAP_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_libc = ctypes.CDLL(None, use_errno=True)


def _last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 63  # dropping a capability the kernel does not know fails with EINVAL, which is skipped


_LAST_CAP = _last_cap()


class SandboxLaunch:
    """The preexec_fn of a sandbox's process: cgroups, rlimits, then the sandbox's uid (as root)."""

    def __init__(self, *, cgroup_procs: list[str], rlimits: list[tuple[int, int]], uid: int | None,
                 drop_bounding_set: bool = True):
        self.cgroup_procs = [p.encode() for p in cgroup_procs]
        self.uid = uid
        self.drop_bounding_set = drop_bounding_set
        if uid is None:  # not root: a limit may not rise above our own hard limit
            self.rlimits = [(r, min(v, _hard(r))) for r, v in rlimits]
        else:
            self.rlimits = list(rlimits)
        self._header = _CapHeader(_CAP_VERSION_3, 0)
        self._caps = (_CapData * 2)()

    def __call__(self) -> None:
        try:
            self._join_cgroups()
            self._set_rlimits()
            if self.uid is not None:
                if self.drop_bounding_set:  # an overlay keeps it until bwrap, whose --cap-drop ALL clears it
                    self._drop_bounding_set()
                self._clear_inheritable()
                self._become(self.uid)
        except BaseException as e:  # noqa: BLE001 - whatever it was, the child must not go on to exec
            os.write(2, f"sandbox launch failed: {type(e).__name__}: {e}\n".encode())
            os._exit(126)

    def _join_cgroups(self) -> None:
        for procs in self.cgroup_procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")  # "0": the writing process itself
            finally:
                os.close(fd)

    def _set_rlimits(self) -> None:
        for res, value in self.rlimits:
            resource.setrlimit(res, (value, value))

    @staticmethod
    def _drop_bounding_set() -> None:
        for cap in range(_LAST_CAP + 1):
            if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: no such cap
                raise OSError(ctypes.get_errno(), f"dropping capability {cap} from the bounding set")

    def _clear_inheritable(self) -> None:
        if _libc.capget(ctypes.byref(self._header), self._caps) != 0:
            raise OSError(ctypes.get_errno(), "capget")
        self._caps[0].inheritable = self._caps[1].inheritable = 0
        if _libc.capset(ctypes.byref(self._header), self._caps) != 0:
            raise OSError(ctypes.get_errno(), "capset (clearing the inheritable set)")

    @staticmethod
    def _become(uid: int) -> None:
        """Real, effective and saved ids and no groups: with all three uids non-zero the kernel also
        empties the permitted, effective and ambient capability sets."""
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid) or os.getgroups():
            raise OSError("the sandbox's uid, gid and groups did not take")


def _hard(res: int) -> int:
    hard = resource.getrlimit(res)[1]
    return hard if hard != resource.RLIM_INFINITY else 2**63 - 1
