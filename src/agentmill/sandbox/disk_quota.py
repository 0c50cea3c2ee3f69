"""A per-trial disk quota: the trial's scratch folder is a filesystem of its own, `storage_mb` big.

RLIMIT_FSIZE (sandbox/limits.py) caps the size of one file; an agent could still write any number
of them to the host's disk and starve every other trial on the machine. So the folder a trial
writes in (its writable root or overlay upper layer, /logs/agent, the verifier's folders) is an
ext4 filesystem in a sparse image file, loop-mounted over that folder: past the quota every write
fails with ENOSPC inside the sandbox, and the host's disk holds at most the image's size. The image
file lives inside the folder it is mounted over (the mount hides it), so removing the folder after
the unmount removes everything, and a sweep of a dead process's folder finds it.

The trial watches the filesystem while the agent runs (`guard`): once it is full, the agent is
stopped and the trial ends `agent_error` ("disk quota exceeded"), never verified, never rerun.

Mounting needs root and loop devices; elsewhere `mount_quota` raises QuotaUnavailable and the
trial runs with the per-file cap only, with a note that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from agentmill.errors import AgentmillError

IMAGE = ".disk"
POLL = 0.25  # seconds between looks at the free space while the agent runs
# Full: the files use storage_mb, or less than this is left (ext4 counts delayed allocation as used).
FULL_BELOW = 1 << 20
# ext4's own metadata (inode tables, bitmaps, descriptors) takes 2-4% of an image (measured: 16 MB
# to 10 GB): that much more is allotted, so a task's storage_mb is what its files may use.
_OVERHEAD = 0.04
# 4 KiB blocks and an inode per 16 KiB at every size (mke2fs would pick 1 KiB blocks and more
# inodes for small images), no journal, no reserve for root, no room kept for growing
_MKFS = [
    "mkfs.ext4",
    "-q",
    "-F",
    "-T",
    "default",
    "-b",
    "4096",
    "-i",
    "16384",
    "-m",
    "0",
    "-O",
    "^has_journal,^resize_inode",
    "-E",
    "lazy_itable_init=1,nodiscard",
]
# noinit_itable: no kernel thread zeroes the inode tables afterwards (it would write the sparse file full)
_MOUNT_OPTIONS = "loop,nosuid,nodev,noatime,noinit_itable"

T = TypeVar("T")


class QuotaUnavailable(AgentmillError):
    """No quota can be mounted here (not root, no loop device, no mkfs.ext4)."""


class DiskQuotaExceeded(AgentmillError):
    """The agent filled the trial's filesystem."""


class DiskQuota:
    """A mounted quota over `folder`."""

    def __init__(self, folder: Path, size_mb: int):
        self.folder, self.size_mb = folder, size_mb
        self.capacity = self.free()[0]  # a little over size_mb: ext4 itself stops writes there

    def free(self) -> tuple[int, int]:
        """(free bytes, free inodes) for unprivileged writers."""
        st = os.statvfs(self.folder)
        return st.f_bavail * st.f_frsize, st.f_favail

    def full(self) -> bool:
        """Whether the trial's files reached its storage_mb. A write that fails at the filesystem's
        end may give its blocks back (fuse-overlayfs drops a partial file), so the end is not
        required: reaching storage_mb counts. Such a write discarded between two looks can go
        unnoticed; the host's disk is protected all the same."""
        space, inodes = self.free()
        return self.capacity - space >= self.size_mb << 20 or space < FULL_BELOW or inodes == 0

    def exceeded(self) -> DiskQuotaExceeded:
        return DiskQuotaExceeded(
            f"disk quota exceeded: the trial's files reached its storage_mb ({self.size_mb} MB); the agent was stopped"
        )

    async def guard(self, work: Awaitable[T]) -> T:
        """Await `work`, cancelling it and raising DiskQuotaExceeded once the filesystem is full."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=POLL)
                if done:
                    return task.result()
                if self.full():  # one statvfs: microseconds, fine on the event loop
                    raise self.exceeded()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


class NoQuota:
    """The same face where no quota could be mounted: nothing is watched."""

    def full(self) -> bool:
        return False

    async def guard(self, work: Awaitable[T]) -> T:
        return await work


QUOTA_ENV = "AGENTMILL_DISK_QUOTA"  # "0": no quota (the per-file cap only), e.g. on hosts that lend no loop devices


def quota_available() -> str | None:
    """None when quotas can be mounted here, else why not."""
    if os.environ.get(QUOTA_ENV, "1").strip() == "0":
        return f"{QUOTA_ENV}=0"
    if os.geteuid() != 0:
        return "not root (mounting a filesystem image needs root)"
    missing = [t for t in ("mkfs.ext4", "mount", "umount") if shutil.which(t) is None]
    if missing:
        return f"missing host tools: {', '.join(missing)} (apt-get install -y e2fsprogs mount)"
    if not os.path.exists("/dev/loop-control"):
        return "no loop devices (/dev/loop-control)"
    return None


def mount_quota(folder: Path, size_mb: int) -> DiskQuota:
    """Make `folder` (existing, empty but for nothing that must survive) a filesystem of `size_mb`
    usable megabytes. Its mode is kept. QuotaUnavailable when that cannot be done here."""
    why = quota_available()
    if why is not None:
        raise QuotaUnavailable(f"disk quota not enforced: {why}")
    mode = os.stat(folder).st_mode & 0o7777
    image = folder / IMAGE
    with open(image, "wb") as f:  # sparse: the host's disk holds only what is written
        f.truncate(int((size_mb * (1 + _OVERHEAD) + 1) * (1 << 20)) // 4096 * 4096)
    try:
        _run(_MKFS + [str(image)])
        _run(["mount", "-t", "ext4", "-o", _MOUNT_OPTIONS, str(image), str(folder)])
    except QuotaUnavailable:
        image.unlink(missing_ok=True)
        raise
    try:
        os.chmod(folder, mode)  # the filesystem's root, as the folder was (sandbox uids traverse it)
        shutil.rmtree(folder / "lost+found", ignore_errors=True)  # nothing of ours; fsck is never run
    except OSError:
        unmount(folder)
        raise
    return DiskQuota(folder, size_mb)


def unmount(folder: Path) -> None:
    """Unmount a quota mounted over `folder`, if any (lazily when still busy: the loop device is
    freed once the last user is gone). The image file is then an ordinary file in the folder."""
    if not os.path.ismount(folder):
        return
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def remove_folder(folder: Path) -> None:
    """A trial's scratch folder, gone: unmounted first, so removal never walks a live filesystem twice."""
    with contextlib.suppress(OSError):
        unmount(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise QuotaUnavailable(
            f"disk quota not enforced: {argv[0]} failed: {(done.stderr or done.stdout).strip()[-300:]}"
        )


def trial_quota(folder: Path, size_mb: int) -> tuple[DiskQuota | NoQuota, str | None]:
    """The quota over a trial's scratch folder, or none and a note that says why."""
    try:
        return mount_quota(folder, size_mb), None
    except QuotaUnavailable as e:
        return NoQuota(), str(e)
