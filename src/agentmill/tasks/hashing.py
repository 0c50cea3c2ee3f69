"""Stable content hashes of directories: same files -> same hash, any byte changed -> new hash."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_SKIP = {".git", "__pycache__", ".DS_Store"}


def hash_tree(root: Path, *, skip: set[str] = _SKIP) -> str:
    """sha256 over (relative path, kind, mode bit x, bytes) of every entry, in sorted order.

    File modes other than the executable bit and timestamps are ignored, so a fresh checkout
    hashes the same as the original.
    """
    h = hashlib.sha256()
    for rel, full in _walk(root, skip):
        if full.is_symlink():
            h.update(b"L\0" + rel.encode() + b"\0" + os.readlink(full).encode() + b"\0")
        elif full.is_dir():
            h.update(b"D\0" + rel.encode() + b"\0")
        else:
            x = b"x" if os.access(full, os.X_OK) else b"-"
            h.update(b"F\0" + rel.encode() + b"\0" + x + b"\0")
            h.update(hash_file(full).encode() + b"\0")
    return h.hexdigest()


def hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_text(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def _walk(root: Path, skip: set[str]):
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        base = Path(dirpath)
        for name in dirnames + sorted(f for f in filenames if f not in skip):
            full = base / name
            out.append((full.relative_to(root).as_posix(), full))
    out.sort(key=lambda item: item[0])
    return out
