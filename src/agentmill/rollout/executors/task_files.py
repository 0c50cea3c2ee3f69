"""Task folders shipped to another machine: packed once on the driver, landed once per node.

A worker node cannot read the driver's dataset folder, so a trial's task travels as a tar of its
folder. The node unpacks it into its own cache under the content hash and checks that the copy
hashes to exactly that: what runs there is byte for byte the task the driver planned.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.runtime.paths import cache_dir
from agentmill.tasks.hashing import _SKIP, hash_tree
from agentmill.tasks.io import load_task
from agentmill.tasks.model import Task


@dataclass(frozen=True)
class PackedTask:
    folder_hash: str  # hash_tree of the driver's folder (a tool task's content hash also covers its gyms)
    data: bytes  # the folder as a gzipped tar


def pack_task(task: Task) -> PackedTask:
    """The task folder as a gzipped tar (what the hash covers: caches like .git left out)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(task.path, arcname=task.name, filter=lambda info: None if _skipped(info.name) else info)
    return PackedTask(hash_tree(task.path), buf.getvalue())


def land_task(task: Task, packed: PackedTask, root: Path | None = None) -> Task:
    """This node's copy of `task` (unpacked from `packed` once, then reused), loaded and hash-checked."""
    # by hash and name: two tasks may share content (the hash leaves the folder's name out)
    folder = (root or cache_dir() / "shipped-tasks") / task.content_hash / task.name
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.parent / f".tmp-{task.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            with tarfile.open(fileobj=io.BytesIO(packed.data), mode="r:gz") as tar:
                tar.extractall(tmp, filter="data")  # no absolute paths, no links out, no device files
            if hash_tree(tmp / task.name) != packed.folder_hash:
                raise AgentmillError(f"task {task.name}: the copy shipped to this node does not match its content hash")
            try:
                (tmp / task.name).rename(folder)
            except OSError:  # another process on this node landed it first
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    landed = load_task(folder)
    if landed.content_hash != task.content_hash:  # the copy was edited after landing (or a bundled gym differs)
        raise AgentmillError(
            f"{folder}: this node's copy of task {task.name} does not hash as the driver's "
            "(was it modified? remove the folder)"
        )
    return landed


def _skipped(arcname: str) -> bool:
    return any(part in _SKIP for part in Path(arcname).parts)
