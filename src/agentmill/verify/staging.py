"""Stage task files (tests, solutions) into a fresh host folder that a sandbox mounts read-only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def stage(sources: tuple[Path, ...], dest: Path) -> Path:
    """Copy directories' contents and single files into `dest`, readable by any sandbox uid."""
    dest.mkdir(parents=True, exist_ok=True)
    for src in sources:
        if src.is_dir():
            shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dest / src.name)
    for p in [dest, *dest.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() or os.access(p, os.X_OK) else 0o644)
    return dest
