"""Where agentmill keeps state on the host.

Sandboxes run as unprivileged uids, and bubblewrap binds host paths as that uid, so everything a
sandbox mounts must sit under world-traversable directories. When we run as root the defaults
therefore live under /var (not /root, which is 0700); override with AGENTMILL_CACHE and
AGENTMILL_SCRATCH.
"""

from __future__ import annotations

import os
import shutil
from importlib import resources
from pathlib import Path

from agentmill.errors import AgentmillError


def _base(env: str, root_default: str, user_default: Path) -> Path:
    if os.environ.get(env):
        path = Path(os.environ[env])
    elif os.geteuid() == 0:
        path = Path(root_default)
    else:
        path = user_default
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        path.chmod(0o711)  # traversable, not listable
    return path


def cache_dir() -> Path:
    """Built images and other content-addressed results, kept across runs."""
    return _base("AGENTMILL_CACHE", "/var/cache/agentmill", Path.home() / ".cache" / "agentmill")


def scratch_dir() -> Path:
    """Per-sandbox root filesystems and control sockets, removed when the sandbox ends."""
    return _base(
        "AGENTMILL_SCRATCH", "/var/tmp/agentmill", Path(os.environ.get("TMPDIR", "/tmp")) / f"agentmill-{os.getuid()}"
    )


def scratch_temp(kind: str) -> Path:
    """A fresh per-sandbox folder, named with our pid so a later process can sweep it if we die."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=scratch_dir()))
    path.chmod(0o711)  # sandbox uids must traverse it to reach their mounts
    return path


def sweep_scratch() -> int:
    """Remove scratch folders of agentmill processes that died (kill -9). Returns how many."""
    removed = 0
    for entry in scratch_dir().iterdir():
        parts = entry.name.split("-")
        if len(parts) < 3 or not parts[1].isdigit() or entry.name == "assets":
            continue
        if Path(f"/proc/{parts[1]}").exists():
            continue
        if entry.is_dir() and not entry.is_symlink():
            from agentmill.sandbox.disk_quota import remove_folder  # a dead trial's quota is still mounted

            remove_folder(entry)
        else:
            entry.unlink(missing_ok=True)
        removed += 1
    return removed


def ensure_traversable(path: Path) -> Path:
    """Refuse a host folder that sandbox uids could not reach, naming the ancestor to fix."""
    if os.geteuid() != 0:
        return path
    for ancestor in [path, *path.parents]:
        if ancestor.exists() and not ancestor.stat().st_mode & 0o001:
            raise AgentmillError(
                f"{path}: sandboxes run as unprivileged uids and cannot enter {ancestor} "
                f"(mode {oct(ancestor.stat().st_mode & 0o777)}); use a folder outside it"
            )
    return path


_assets: dict[str, Path] = {}  # name -> its copy: hashing the folder on every sandbox start added up


def package_assets(name: str) -> Path:
    """A copy of one of the package's asset folders (guest, shims) where sandbox uids can read it."""
    known = _assets.get(name)
    if known is not None and known.is_dir():  # still there (a sweep of the scratch folder removes it)
        return known
    _assets[name] = dest = _copy_assets(name)
    return dest


def _copy_assets(name: str) -> Path:
    src = Path(str(resources.files("agentmill.sandbox") / name))
    from agentmill.tasks.hashing import hash_tree  # at call time: tasks stand on the runtime, not it on them

    dest = scratch_dir() / "assets" / f"{name}-{hash_tree(src)[:16]}"
    if not dest.exists():
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("__pycache__"))
        for p in [tmp, *tmp.rglob("*")]:
            p.chmod(0o755 if p.is_dir() or os.access(p, os.X_OK) else 0o644)
        try:
            tmp.rename(dest)
        except OSError:  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
