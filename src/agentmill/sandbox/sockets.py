"""Host-side connections to unix sockets that a sandbox made in its control folder.

The control folder belongs to the sandbox's uid, so any name in it can be swapped for a link at any
moment. The host pins a socket once, when it appears (an O_PATH descriptor of the socket itself,
checked to be a socket the sandbox's uid made), and connects through /proc/self/fd/N from then on:
a name swapped later cannot send the host's requests, made as root, to another socket on the host.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def is_sandbox_socket(st: os.stat_result, uid: int | None) -> bool:
    """A socket the sandbox's uid made; not a file, a link or anything else in its place."""
    return stat.S_ISSOCK(st.st_mode) and (uid is None or st.st_uid == uid)


def pin_socket(path: Path, uid: int | None) -> int | None:
    """An O_PATH descriptor of the socket at `path`, or None if `path` is anything else (or gone)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if not is_sandbox_socket(os.fstat(fd), uid):
        os.close(fd)
        return None
    return fd


def pinned_path(fd: int) -> Path:
    """Where to connect to a pinned socket (valid while `fd` is open)."""
    return Path(f"/proc/self/fd/{fd}")
