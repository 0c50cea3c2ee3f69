"""Waiting for a name to appear in a folder without polling: inotify, read by the event loop.

A sandbox is ready when its guest renames its bound, listening socket into the control folder; the
host learns it from the kernel the moment it happens instead of looking every few milliseconds.
Where inotify is unavailable (no instances left, a kernel without it) it falls back to polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import struct
import threading
from pathlib import Path

_IN_CREATE, _IN_MOVED_TO, _IN_ONLYDIR = 0x100, 0x80, 0x01000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
_libc = ctypes.CDLL(None, use_errno=True)
POLL_FALLBACK = 0.002  # seconds between looks when there is no inotify


def _inotify_fd(directory: Path) -> int | None:
    fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        return None
    if _libc.inotify_add_watch(fd, os.fsencode(directory), _IN_CREATE | _IN_MOVED_TO | _IN_ONLYDIR) < 0:
        os.close(fd)
        return None
    return fd


def _close_later(fd: int) -> None:
    """Closing an inotify instance waits for a grace period in the kernel (3-28 ms measured here,
    more than the whole readiness wait used to lose to polling): a thread of its own does it,
    off the sandbox's start."""
    threading.Thread(target=os.close, args=(fd,), name="inotify-close", daemon=True).start()


def _names(data: bytes) -> list[bytes]:
    names, at = [], 0
    while at + _EVENT.size <= len(data):
        _, _, _, size = _EVENT.unpack_from(data, at)
        names.append(data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0"))
        at += _EVENT.size + size
    return names


async def wait_for_name(directory: Path, name: str, *, give_up: asyncio.Future, timeout: float) -> bool:
    """True once `directory/name` exists; False when `give_up` finishes first or `timeout` passes.

    The watch is set before the first look, so an entry made at any moment is seen.
    """
    fd = _inotify_fd(directory)
    if fd is None:
        return await _poll_for(directory / name, give_up=give_up, timeout=timeout)
    loop = asyncio.get_running_loop()
    seen = loop.create_future()
    wanted = os.fsencode(name)

    def readable() -> None:
        with contextlib.suppress(BlockingIOError):
            while True:
                if wanted in _names(os.read(fd, 65536)) and not seen.done():
                    seen.set_result(True)

    try:
        loop.add_reader(fd, readable)
        if (directory / name).exists():
            return True
        done, _ = await asyncio.wait({seen, give_up}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        return seen in done
    finally:
        loop.remove_reader(fd)
        _close_later(fd)
        seen.cancel()


async def _poll_for(path: Path, *, give_up: asyncio.Future, timeout: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not path.exists():
        if give_up.done() or asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(POLL_FALLBACK)
    return True
