"""What the viewer can open: a registry of sources, each a set of JSON routes over one kind of folder.

A source answers `GET /api/<route>?...` with JSON and names its `kind`; the page picks the panel
for that kind. Rollout runs (and recipe runs, through their rollout) are the built-in source. A
synthesis store plugs in with one opener returning its own `ViewSource`, named in the
`agentmill.view_sources` entry-point group (name = the kind, value = the opener) or passed to
`register_source`, and one panel in the page (`PANELS[kind]`); nothing here imports it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from agentmill.errors import AgentmillError
from agentmill.registry import Registry

Route = Callable[[dict[str, list[str]]], dict]


class ViewSource(Protocol):
    kind: str  # which panel of the page renders it: "rollout", ...
    title: str

    def routes(self) -> dict[str, Route]:
        """route name -> handler of the query parameters, returning JSON-ready data."""
        ...

    def close(self) -> None: ...


Opener = Callable[[Path], "ViewSource | None"]  # None: not this kind of folder
# Folder kinds the viewer opens: run folders register in code (view/rollout_source.py); synth stores
# are built in; plug-ins declare `agentmill.view_sources`.
VIEW_SOURCES: Registry[Opener] = Registry(
    "viewer source", group="agentmill.view_sources", builtins={"synth": "agentmill.synth.view_source:open_synth_store"}
)


def register_source(name: str, opener: Opener) -> None:
    """Add a kind of folder the viewer can open; later registrations are tried first."""
    VIEW_SOURCES.register(name, opener)


def open_source(path: Path, **options) -> ViewSource:
    """The first registered source that recognises `path`; one clear error when none does."""
    path = Path(path)
    if not path.exists():
        raise AgentmillError(f"{path}: no such folder")
    in_code = list(reversed(VIEW_SOURCES.loaded().items()))  # registered in code: later ones first
    rest = [(n, o) for n, o in VIEW_SOURCES.all(on_error=_skip_broken).items() if n not in dict(in_code)]
    openers = in_code + rest  # then built-ins and plug-ins
    for _name, opener in openers:
        source = opener(path, **options)
        if source is not None:
            return source
    kinds = ", ".join(name for name, _ in openers)
    raise AgentmillError(
        f"{path}: nothing the viewer can open (known kinds: {kinds}); give a folder made by "
        f"`agentmill rollout --out`, `agentmill run --out` or a plug-in source"
    )


def _skip_broken(name: str, target: str, error: Exception) -> None:
    """A broken plug-in must not keep the viewer from opening anything else."""
    print(
        f"agentmill view: source {name!r} ({target}) cannot be loaded, skipped: {type(error).__name__}: {error}",
        file=sys.stderr,
    )
