"""Whether a trial's writable root is a copy of the image's template or an overlay over it.

AGENTMILL_OVERLAY (or ImageBuilder(overlay=...)): "1" always an overlay, "0" always a copy, unset
or "auto" an overlay once the template holds more than OVERLAY_FROM entries or OVERLAY_FROM_BYTES
and the host can mount one. Below that a copy costs no more than the overlay's daemon (measured:
the two are level at about 120 small files), and above it the overlay costs the same at any size, so a
trial's filesystem costs a bounded amount whatever the image holds (docs/benchmarks.md, "Trial
filesystems").
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

from agentmill.errors import AgentmillError

OVERLAY_ENV = "AGENTMILL_OVERLAY"
OVERLAY_FROM = 128  # entries: copy and overlay cost about the same here (benchmarks/trial_fs.py)
OVERLAY_FROM_BYTES = 4 << 20
_SETTINGS = {"1": True, "0": False, "auto": None, "": None}


def overlay_setting(value: bool | None = None) -> bool | None:
    """True/False forced, None: auto. An explicit value wins over the environment."""
    if value is not None:
        return value
    raw = os.environ.get(OVERLAY_ENV, "").strip().lower()
    if raw not in _SETTINGS:
        raise AgentmillError(f"{OVERLAY_ENV}={raw!r}: expected 1, 0 or auto")
    return _SETTINGS[raw]


def count_entries(root: Path, stop_after: int = OVERLAY_FROM + 1) -> int:
    """Files, folders and links under root, counting no further than stop_after; a template over
    OVERLAY_FROM_BYTES counts as over the bound whatever its entries."""
    count, size, folders = 0, 0, [str(root)]
    while folders and count < stop_after:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                count += 1
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    size += entry.stat(follow_symlinks=False).st_size
        if size > OVERLAY_FROM_BYTES:
            return stop_after
    return min(count, stop_after)


@functools.cache
def overlay_available() -> bool:
    """fuse-overlayfs, unshare and mount on PATH and /dev/fuse usable (checked once per process)."""
    tools = all(shutil.which(t) for t in ("fuse-overlayfs", "unshare", "mount"))
    return tools and os.access("/dev/fuse", os.R_OK | os.W_OK)


def use_overlay(setting: bool | None, template_entries: int) -> bool:
    if setting is not None:
        return setting
    return template_entries > OVERLAY_FROM and overlay_available()
