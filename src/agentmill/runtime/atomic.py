"""Atomic file writes: write a temporary file beside the target, flush it to disk, rename it into place.

A reader (or a process killed half-way) sees the old file or the new one, never a torn one. The
temporary name carries our pid so concurrent writers never share one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: Path | str, *, fsync: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path`, on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path | str, text: str, *, encoding: str = "utf-8", errors: str = "strict") -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding=encoding, errors=errors)
    return Path(path)


def write_json_atomic(
    path: Path | str, data: Any, *, indent: int | None = 2, trailing_newline: bool = False, ensure_ascii: bool = True
) -> Path:
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if trailing_newline else "")
    return write_text_atomic(path, text)
