"""Paths inside an image's root filesystem, resolved as the image would resolve them.

Builders write into an image's files as host root (COPY, WORKDIR). A RUN step may have left a
symlink such as `/app/link -> /root`; following it on the host would write into the host's /root.
So every component is resolved against the image root, never the host's, and `..` stops at it.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentmill.errors import AgentmillError

_MAX_LINKS = 40


class PathEscapeError(AgentmillError):
    """A path inside an image loops or cannot be resolved."""


def resolve_inside(root: Path, path: str) -> Path:
    """The host path of image path `path` under `root`, with symlinks resolved inside `root`."""
    pending = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    links = 0
    while pending:
        name = pending.pop(0)
        if name == "..":
            if done:
                done.pop()
            continue
        candidate = root.joinpath(*done, name)
        if candidate.is_symlink():
            links += 1
            if links > _MAX_LINKS:
                raise PathEscapeError(f"{path}: too many levels of symbolic links inside the image")
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = []
            pending = [p for p in target.split("/") if p not in ("", ".")] + pending
            continue
        done.append(name)
    return root.joinpath(*done)


def copy_into(root: Path, src: Path, dest: Path) -> list[Path]:
    """Copy a file or folder tree `src` to host path `dest` (already resolved inside `root`), every
    target resolved inside `root` again, so a symlink the image holds at any depth is never
    followed out. Links in `src` are copied as links; an existing link at a file target is replaced."""
    made = []
    if src.is_symlink() or not src.is_dir():
        _copy_file(src, dest)
        return [dest]
    dest.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for name in sorted(dirnames + filenames):
            s = Path(dirpath) / name
            target = (
                resolve_inside(root, "/" + os.path.relpath(dest / rel / name, root))
                if not (dest / rel / name).is_symlink()
                else dest / rel / name
            )
            if s.is_dir() and not s.is_symlink():
                if target.is_symlink():
                    target.unlink()
                target.mkdir(parents=True, exist_ok=True)
                os.chmod(target, s.stat().st_mode & 0o7777)
            else:
                _copy_file(s, target)
            made.append(target)
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
    return made


def _copy_file(src: Path, target: Path) -> None:
    import shutil

    if target.is_symlink() or (target.exists() and not target.is_dir()):
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, target, follow_symlinks=False)
