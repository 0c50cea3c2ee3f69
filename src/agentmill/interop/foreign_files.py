"""Reading files of a folder another tool (or an agent) wrote: regular files only, never through a link,
FIFO or device, each at most MAX_FILE_BYTES; every problem is a ValueError naming the file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 256 * 1024 * 1024


def regular(path: Path) -> os.stat_result:
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode):  # links, FIFOs, devices: never followed or read
        raise ValueError(f"{path.name}: not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise ValueError(f"{path.name}: {st.st_size} bytes, over the {MAX_FILE_BYTES} byte limit")
    return st


def read_bytes(path: Path) -> bytes | None:
    if not path.exists() and not path.is_symlink():
        return None
    regular(path)
    return path.read_bytes()


def read_text(path: Path) -> str:
    data = read_bytes(path)
    return data.decode("utf-8", "replace") if data is not None else ""


def read_json(path: Path) -> Any:
    data = read_bytes(path)
    if data is None:
        raise ValueError(f"{path.name}: missing")
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path.name}: not JSON ({e.msg}, line {e.lineno})") from None
