"""`cp -a` for small trees, done in this process.

Every trial copied two small trees with cp: a small image's template (images/build.py, below
trial_fs.OVERLAY_FROM entries) and the verifier's home (verify/test_script.py). Starting cp costs
milliseconds of CPU in its dynamic loader alone (on a VM each cpuid the loader runs traps to the
hypervisor); with 256 trials at once that made cp about a tenth of the run's CPU (perf,
benchmarks/inflight.py), for trees of a few entries. While a tree is small and holds only folders,
regular files and links, the copy is made here with the same result; anything else (a tree past the
budget, hard links, devices, fifos, sockets, extended attributes) still goes to cp, which keeps all
of it.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

IN_PROCESS_ENTRIES = 64  # past about this, one cp start costs less than our per-entry work (tmpfs, measured)
IN_PROCESS_BYTES = 8 << 20


def copy_tree(src: Path, dest: Path, *, into: bool = False) -> None:
    """`cp -a --reflink=auto src dest` (dest must not exist), or with `into` `cp -a src/. dest`
    (dest exists and takes src's own mode, owner and times). Links are copied as links, never
    followed."""
    entries = _small_plain_tree(src)
    if entries is None:
        subprocess.run(["cp", "-a", "--reflink=auto", f"{src}/." if into else str(src), str(dest)], check=True)
        return
    if not into:
        os.mkdir(dest, 0o700)
    for rel, st in entries:
        _make(src / rel, dest / rel, st)
    # Owner, mode and times last (making a child changes its folder's mtime), each folder after
    # what it holds (a folder made 0500 first could stop our own way in, were we not root).
    for rel, st in reversed(entries):
        if not stat.S_ISREG(st.st_mode):  # a file got them as it was written
            _keep_attributes(dest / rel, st)
    _keep_attributes(dest, os.lstat(src))


def _small_plain_tree(root: Path) -> list[tuple[str, os.stat_result]] | None:
    """Every entry under root (parents before children) with its lstat, or None when cp must do it."""
    out: list[tuple[str, os.stat_result]] = []
    size, folders = 0, [""]
    if _has_xattrs(root):
        return None
    while folders:
        rel_dir = folders.pop()
        with os.scandir(root / rel_dir) as listing:
            for entry in listing:
                st = entry.stat(follow_symlinks=False)
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if stat.S_ISDIR(st.st_mode):
                    folders.append(rel)
                elif stat.S_ISREG(st.st_mode):
                    if st.st_nlink > 1:  # cp -a keeps hard links linked
                        return None
                    size += st.st_size
                elif not stat.S_ISLNK(st.st_mode):  # devices, fifos, sockets
                    return None
                out.append((rel, st))
                if len(out) > IN_PROCESS_ENTRIES or size > IN_PROCESS_BYTES or _has_xattrs(Path(entry.path)):
                    return None
    return out  # every folder before what it holds: it is listed only after it was added


def _has_xattrs(path: Path) -> bool:
    try:
        return bool(os.listxattr(path, follow_symlinks=False))
    except OSError:  # a file system without them
        return False


def _make(src: Path, dest: Path, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        os.mkdir(dest, 0o700)
    elif stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dest)
    else:
        _copy_file(src, dest, st)


def _copy_file(src: Path, dest: Path, st: os.stat_result) -> None:
    """Contents, then owner, mode and times through the open file: no path is looked up twice."""
    fd_in = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fd_out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            left = st.st_size
            while left > 0:
                sent = os.sendfile(fd_out, fd_in, None, left)
                if sent == 0:  # the file shrank while we copied it
                    break
                left -= sent
            _keep_attributes(fd_out, st)
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


def _keep_attributes(path: Path | int, st: os.stat_result) -> None:
    """On a path (never through a link) or an open file."""
    link = stat.S_ISLNK(st.st_mode)
    follow = isinstance(path, int)  # an open file: no link to follow; a path: never through one
    try:
        os.chown(path, st.st_uid, st.st_gid, follow_symlinks=follow)
    except PermissionError:  # as cp -a without root: the copy is ours
        pass
    if not link:  # after chown, which clears set-id bits; Linux has no mode on a link
        os.chmod(path, stat.S_IMODE(st.st_mode))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=follow)
