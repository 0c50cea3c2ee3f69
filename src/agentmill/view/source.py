"""What the viewer can open: a registry of sources, each a set of JSON routes over one kind of folder.

A source answers `GET /api/<route>?...` with JSON and names its `kind`; the page picks the panel
for that kind. Rollout runs (and recipe runs, through their rollout) are the built-in source. A
synthesis store plugs in with one opener returning its own `ViewSource`, named in the
`agentmill.view_sources` entry-point group (name = the kind, value = the opener) or passed to
`register_source`, and one panel in the page (`PANELS[kind]`); nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
import sys
from pathlib import Path
from typing import Protocol

from agentmill.errors import AgentmillError

Route = Callable[[dict[str, list[str]]], dict]


class ViewSource(Protocol):
    kind: str  # which panel of the page renders it: "rollout", ...
    title: str

    def routes(self) -> dict[str, Route]:
        """route name -> handler of the query parameters, returning JSON-ready data."""
        ...

    def close(self) -> None: ...


Opener = Callable[[Path], "ViewSource | None"]  # None: not this kind of folder
_OPENERS: list[tuple[str, Opener]] = []
GROUP = "agentmill.view_sources"
_PLUGINS: list[tuple[str, Opener]] | None = None


def register_source(name: str, opener: Opener) -> None:
    """Add a kind of folder the viewer can open; later registrations are tried first."""
    _OPENERS.insert(0, (name, opener))


def open_source(path: Path, **options) -> ViewSource:
    """The first registered source that recognises `path`; one clear error when none does."""
    path = Path(path)
    if not path.exists():
        raise AgentmillError(f"{path}: no such folder")
    openers = [*_OPENERS, *_plugins()]
    for _name, opener in openers:
        source = opener(path, **options)
        if source is not None:
            return source
    kinds = ", ".join(name for name, _ in openers)
    raise AgentmillError(f"{path}: nothing the viewer can open (known kinds: {kinds}); give a folder made by "
                         f"`agentmill rollout --out`, `agentmill run --out` or a plug-in source")


def _plugins() -> list[tuple[str, Opener]]:
    """The openers named in the entry-point group (loaded once), tried after those registered in code."""
    global _PLUGINS
    if _PLUGINS is None:
        names, loaded = {name for name, _ in _OPENERS}, []
        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            if ep.name in names:
                continue
            try:
                loaded.append((ep.name, ep.load()))
            except Exception as e:  # a broken plug-in must not keep the viewer from opening anything else
                print(f"agentmill view: source {ep.name!r} ({ep.value}) cannot be loaded, skipped: "
                      f"{type(e).__name__}: {e}", file=sys.stderr)
        _PLUGINS = loaded
    return _PLUGINS
