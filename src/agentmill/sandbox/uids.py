"""Leases of unprivileged host uids, one per live sandbox.

Each sandbox runs as its own uid so that per-uid limits (RLIMIT_NPROC) apply per sandbox and one
trial cannot read another's files. A lease is an flock on a file, so it is released even if the
holder dies.
"""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
from pathlib import Path

UID_BASE = 200_000
UID_COUNT = 8192
# Owns overlay templates (the read-only lower layer under trials): never leased and no user's (the
# image builder's account is 199999), so nothing runs as it; an overlay's daemon maps it beside the
# sandbox's uid to read the template as it is.
TEMPLATE_UID = UID_BASE - 2
_LOCK_DIR = Path(tempfile.gettempdir()) / "agentmill-uids"


class UidLease:
    def __init__(self, uid: int, fd: int | None):
        self.uid = uid
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def lease_uid() -> UidLease:
    """A free uid when we are root; our own uid otherwise (bwrap then runs as us)."""
    if os.geteuid() != 0:
        return UidLease(os.geteuid(), None)
    _LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    start = random.randrange(UID_COUNT)
    for i in range(UID_COUNT):
        uid = UID_BASE + (start + i) % UID_COUNT
        fd = os.open(_LOCK_DIR / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise RuntimeError("no free sandbox uid: too many sandboxes at once")
