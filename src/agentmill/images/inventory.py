"""What the image cache holds (`agentmill images`) and freeing it (`agentmill images prune`).

Two kinds of entries: built images (`<cache>/images/<key>/`, one per task environment) and Debian
layers (`<cache>/layers/<key>/`, shared between images). Last use is the mtime of the entry's
metadata file; layers are touched whenever a build reuses them, images whenever a trial loads them.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentmill.images.layers import LayerStore, remove_tree
from agentmill.runtime.paths import cache_dir


class CacheEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str  # "image" | "layer"
    key: str
    what: str  # an image's base and builder, a layer's step
    size_bytes: int
    last_used: float
    uses: list[str] = []  # a layer: the images whose final filesystem it is


def _du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.returncode == 0 and out.stdout else 0


def list_entries(cache: Path | None = None) -> list[CacheEntry]:
    root = cache or cache_dir()
    entries: list[CacheEntry] = []
    referenced: dict[str, list[str]] = {}
    for meta in sorted((root / "images").glob("*/image.json")):
        data = json.loads(meta.read_text())
        for layer in data.get("layers", []):
            referenced.setdefault(layer, []).append(data["key"][:12])
        what = f"{data.get('builder', 'host')}: {data.get('base') or '-'}"
        entries.append(
            CacheEntry(
                kind="image", key=data["key"], what=what, size_bytes=_du(meta.parent), last_used=meta.stat().st_mtime
            )
        )
    layers_root = root / "layers"
    if layers_root.is_dir():
        for info, mtime in LayerStore(layers_root).all():
            entries.append(
                CacheEntry(
                    kind="layer",
                    key=info.key,
                    what=info.step,
                    size_bytes=info.size_bytes,
                    last_used=mtime,
                    uses=referenced.get(info.key, []),
                )
            )
    return entries


def prune(cache: Path | None = None, *, older_than_days: float = 7.0, everything: bool = False) -> list[CacheEntry]:
    """Remove images unused for `older_than_days` (all of them when `everything`), then the layers
    no remaining image is made of that were also unused that long. Returns what was removed."""
    root = cache or cache_dir()
    cutoff = time.time() - older_than_days * 86400
    removed: list[CacheEntry] = []
    keep_layers: set[str] = set()
    store = LayerStore(root / "layers") if (root / "layers").is_dir() else None
    for entry in list_entries(root):
        if entry.kind != "image":
            continue
        path = root / "images" / entry.key
        if everything or entry.last_used < cutoff:
            remove_tree(path)
            for side in (root / "images").glob(f"{entry.key}.*"):
                side.unlink(missing_ok=True)
            removed.append(entry)
        else:
            keep_layers.update(json.loads((path / "image.json").read_text()).get("layers", []))
    for side in (root / "images").glob("*.needs-container"):  # stale verdicts: a newer builder may do better
        side.unlink(missing_ok=True)
    if store is None:
        return removed
    for info, mtime in store.all():
        if info.key in keep_layers:
            continue
        if everything or mtime < cutoff:
            store.remove(info.key)
            removed.append(
                CacheEntry(kind="layer", key=info.key, what=info.step, size_bytes=info.size_bytes, last_used=mtime)
            )
    return removed


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _age(ts: float) -> str:
    s = max(0.0, time.time() - ts)
    return f"{s / 86400:.1f}d ago" if s >= 86400 else f"{s / 3600:.1f}h ago" if s >= 3600 else f"{s / 60:.0f}m ago"


def render_table(entries: list[CacheEntry]):
    """A rich table for `agentmill images`."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="agentmill images")
    for col in ("kind", "key", "size", "last used", "what", "used by"):
        table.add_column(col, overflow="fold")
    for e in sorted(entries, key=lambda e: (e.kind, -e.last_used)):
        table.add_row(e.kind, e.key[:12], _size(e.size_bytes), _age(e.last_used), Text(e.what[:100]), ", ".join(e.uses))
    total = sum(e.size_bytes for e in entries)
    table.caption = f"{len(entries)} entries, {_size(total)}"
    return table
