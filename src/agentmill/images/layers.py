"""Content-addressed image layers: a base root filesystem from Debian's archive, and one layer per
build step keyed by (step, parent), so two Dockerfiles that share a prefix build it once.

A layer is a complete root filesystem snapshot (`<key>/rootfs`) plus `layer.json`. Snapshots cost
disk, not correctness: a step always starts from its parent's pristine files, and a failed or
retried step throws its copy away. Files belong to the build user's ids (see userns.py).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentmill.images.errors import ImageBuildError
from agentmill.images.locks import KeyedLocks
from agentmill.images.userns import BuildIdentity, run_as_builder, run_in_userns
from agentmill.runtime.paths import cache_dir, ensure_traversable
from agentmill.tasks.hashing import hash_text

LAYER_FORMAT = "1"


class LayerInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    parent: str | None
    step: str  # what made it: the mmdebstrap command or the Dockerfile step (with its inputs' hashes)
    created: float
    build_seconds: float
    size_bytes: int = 0  # disk this layer adds over its parent (unchanged files are shared links)


class LayerError(ImageBuildError):
    """A step failed; `result` is what the step's runner returned. The builders turn it into the
    build's own ImageBuildError or NeedsContainerError."""

    def __init__(self, message: str, result=None):
        self.result = result
        super().__init__(message)


Apply = Callable[[Path], Awaitable[None]]  # fills a fresh copy of the parent's rootfs


def layers_dir() -> Path:
    return cache_dir() / "layers"


class LayerStore:
    def __init__(self, root: Path | None = None):
        self.root = root or layers_dir()
        self.root.mkdir(parents=True, exist_ok=True)
        ensure_traversable(self.root)
        self._locks = KeyedLocks()

    def rootfs(self, key: str) -> Path:
        return self.root / key / "rootfs"

    def info(self, key: str) -> LayerInfo | None:
        meta = self.root / key / "layer.json"
        if not meta.exists():
            return None
        return LayerInfo.model_validate_json(meta.read_text())

    def touch(self, key: str) -> None:
        """Last use, for `agentmill images` and prune."""
        os.utime(self.root / key / "layer.json")

    def all(self) -> list[tuple[LayerInfo, float]]:
        out = []
        for meta in sorted(self.root.glob("*/layer.json")):
            out.append((LayerInfo.model_validate_json(meta.read_text()), meta.stat().st_mtime))
        return out

    @staticmethod
    def key_for(parent: str | None, step: str) -> str:
        return hash_text("agentmill-layer", LAYER_FORMAT, parent or "", step)

    async def derive(
        self, ident: BuildIdentity, parent: str | None, step: str, apply: Apply, label: str | None = None
    ) -> tuple[str, bool]:
        """The layer for `step` (everything its result depends on) over `parent`, built if missing.
        `label` is what people read in `agentmill images`. Returns (key, built_now)."""
        key = self.key_for(parent, step)
        step = label or step
        lock = self._locks(key)
        async with lock:
            if self.info(key) is not None:
                self.touch(key)
                return key, False
            fd = os.open(self.root / f"{key}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
                if self.info(key) is not None:  # another process built it meanwhile
                    self.touch(key)
                    return key, False
                await self._build(ident, key, parent, step, apply)
                return key, True
            finally:
                os.close(fd)

    async def _build(self, ident: BuildIdentity, key: str, parent: str | None, step: str, apply: Apply) -> None:
        started = time.monotonic()
        tmp = self.root / f"{key}.tmp{os.getpid()}"
        await asyncio.to_thread(remove_tree, tmp)
        tmp.mkdir(mode=0o711)
        try:
            if parent is None:
                os.chown(tmp, ident.uid, ident.gid)  # mmdebstrap writes its tarball here as the build user
                (tmp / "rootfs").mkdir()
                os.chown(tmp / "rootfs", ident.uid, ident.gid)
            else:
                await asyncio.to_thread(_copy_tree, self.rootfs(parent), tmp / "rootfs")
            await asyncio.sleep(0.02)  # file times tick coarsely: keep the copy's apart from the step's
            step_started = time.time_ns() - 10_000_000
            await apply(tmp / "rootfs")
            shared = await asyncio.to_thread(dedupe, self.rootfs(parent), tmp / "rootfs", step_started) if parent else 0
            os.chown(tmp, 0, 0)
            size = max(0, await asyncio.to_thread(_du, tmp / "rootfs") - shared)  # what this layer adds
            info = LayerInfo(
                key=key,
                parent=parent,
                step=step,
                created=time.time(),
                build_seconds=round(time.monotonic() - started, 3),
                size_bytes=size,
            )
            (tmp / "layer.json").write_text(info.model_dump_json(indent=2))
            tmp.rename(self.root / key)
        except BaseException:
            await asyncio.to_thread(remove_tree, tmp)
            raise

    def remove(self, key: str) -> None:
        path = self.root / key
        doomed = path.with_name(f"{key}.del{os.getpid()}")
        path.rename(doomed)  # gone from readers at once, deleted at leisure
        remove_tree(doomed)


async def build_base(
    ident: BuildIdentity,
    rootfs: Path,
    *,
    release: str,
    variant: str,
    packages: tuple[str, ...],
    mirror: str,
    timeout: float = 1200,
) -> None:
    """mmdebstrap in unshare mode as the build user, unpacked with the image's own ownership."""
    tarball = rootfs.parent / "base.tar"
    argv = [
        "mmdebstrap",
        "--mode=unshare",
        f"--variant={variant}",
        "--skip=output/dev",
        f"--include={','.join(packages)}",
        '--aptopt=Acquire::Retries "3"',
        release,
        str(tarball),
        mirror,
    ]
    result = await run_as_builder(ident, argv, timeout=timeout, cwd=rootfs.parent, env={"HOME": str(rootfs.parent)})
    if result.returncode != 0 or result.timed_out:
        raise LayerError(
            f"mmdebstrap {release}/{variant} failed: {result.output.strip().splitlines()[-1:] or result.returncode}",
            result,
        )
    result = await run_in_userns(
        ident, ["tar", "-xpf", str(tarball), "-C", str(rootfs), "--numeric-owner", "--exclude=./dev/*"], timeout=600
    )
    tarball.unlink()
    if result.returncode != 0:
        raise LayerError(f"unpacking the {release} base failed: {result.output.strip()[-300:]}", result)


def dedupe(parent: Path, child: Path, step_started_ns: int) -> int:
    """Hard-link the child's files that the step left untouched to the parent's, so a layer costs
    disk only for what its step changed. Untouched: its status changed last during the copy (ctime
    cannot be set from user space, unlike mtime) and it still matches the parent's size, mtime, mode
    and owner. Safe because stored layers are never written again: a
    step works on a `cp -a` copy (new inodes) and sandboxes mount layers read-only. Returns the bytes
    now shared with the parent."""
    shared = 0
    for dirpath, _dirs, files in os.walk(child):
        for name in files:
            c = os.path.join(dirpath, name)
            p = os.path.join(parent, os.path.relpath(c, child))
            try:
                cs, ps = os.lstat(c), os.lstat(p)
            except OSError:
                continue
            same = (
                stat.S_ISREG(cs.st_mode)
                and stat.S_ISREG(ps.st_mode)
                and cs.st_ino != ps.st_ino
                and cs.st_ctime_ns < step_started_ns
                and (cs.st_size, cs.st_mtime_ns, cs.st_mode, cs.st_uid, cs.st_gid)
                == (ps.st_size, ps.st_mtime_ns, ps.st_mode, ps.st_uid, ps.st_gid)
            )
            if same:
                tmp_link = c + ".agentmill-link"
                try:
                    os.link(p, tmp_link)
                except OSError:  # too many links to one inode: keep the copy
                    continue
                os.replace(tmp_link, c)
                shared += cs.st_size
    return shared


def _copy_tree(src: Path, dest: Path) -> None:
    subprocess.run(["cp", "-a", "--reflink=auto", str(src), str(dest)], check=True)


def _du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.returncode == 0 and out.stdout else 0


def remove_tree(path: Path) -> None:
    """Remove a layer or image tree; files may be read-only or owned by the build user's ids."""
    if path.exists() or path.is_symlink():
        # Folders only: files may be hard links shared with other layers, whose modes must not change.
        subprocess.run(["find", str(path), "-type", "d", "-exec", "chmod", "u+rwx", "{}", "+"], capture_output=True)
        shutil.rmtree(path, ignore_errors=True)


def layer_summary(store: LayerStore, keys: list[str]) -> list[dict]:
    out = []
    for k in keys:
        info = store.info(k)
        out.append({"key": k[:16], "step": info.step[:120] if info else "?"})
    return out
