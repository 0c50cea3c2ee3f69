"""Sandbox backends by name: one registration per backend, one factory for every caller.

Trials, verifiers and image builds never name a backend class; they call `create_sandbox(spec)`.
The backend is the one passed, else `AGENTMILL_SANDBOX`, else the embedded bubblewrap backend.
Every registered backend must pass the conformance suite (`sandbox/conformance.py`).

This registry imports no backend: each backend registers itself when its module is imported, and
the package face (`agentmill/sandbox/__init__.py`) imports the built-in ones, so they are registered
whatever module of the package a caller imports first.
"""

from __future__ import annotations

import os
from typing import Callable, TypeVar

from agentmill.errors import SandboxError
from agentmill.sandbox.protocol import Sandbox, SandboxSpec

DEFAULT_BACKEND = "bwrap"
ENV_VAR = "AGENTMILL_SANDBOX"

BackendType = Callable[..., Sandbox]  # called as backend(spec, name=...)
T = TypeVar("T")

_BACKENDS: dict[str, BackendType] = {}


def sandbox_backend(name: str) -> Callable[[T], T]:
    """Class decorator: `@sandbox_backend("bwrap") class BwrapSandbox: ...`."""

    def register(cls: T) -> T:
        existing = _BACKENDS.get(name)
        if existing is not None and existing is not cls:
            raise ValueError(f"sandbox backend '{name}' is already registered by {existing!r}")
        _BACKENDS[name] = cls  # type: ignore[assignment]
        return cls

    return register


def unregister_backend(name: str) -> None:
    """For tests that register a throwaway backend."""
    _BACKENDS.pop(name, None)


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def get_backend(name: str | None = None) -> BackendType:
    chosen = name or os.environ.get(ENV_VAR) or DEFAULT_BACKEND
    try:
        return _BACKENDS[chosen]
    except KeyError:
        source = "" if name else f" (from {ENV_VAR})" if os.environ.get(ENV_VAR) else ""
        raise SandboxError(f"unknown sandbox backend '{chosen}'{source}; registered: {', '.join(sorted(_BACKENDS))}") from None


def create_sandbox(spec: SandboxSpec, *, name: str | None = None, backend: str | None = None) -> Sandbox:
    """A not-yet-started sandbox of the chosen backend for `spec`."""
    return get_backend(backend)(spec, name=name)
