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
from collections.abc import Callable
from typing import Protocol, TypeVar

from agentmill.errors import SandboxError
from agentmill.registry import Registry, UnknownNameError
from agentmill.sandbox.protocol import Capability, Sandbox, SandboxSpec

DEFAULT_BACKEND = "bwrap"
ENV_VAR = "AGENTMILL_SANDBOX"


class BackendType(Protocol):
    """A backend: its class, called as backend(spec, name=...), declaring its capabilities."""

    __name__: str
    capabilities: frozenset[str]

    def __call__(self, spec: SandboxSpec, *, name: str | None = None) -> Sandbox: ...


T = TypeVar("T")

# Backends register themselves on import; plug-in packages may declare `agentmill.sandbox_backends`.
BACKENDS: Registry[BackendType] = Registry("sandbox backend", group="agentmill.sandbox_backends")


def sandbox_backend(name: str) -> Callable[[T], T]:
    """Class decorator: `@sandbox_backend("bwrap") class BwrapSandbox: ...`."""
    return BACKENDS.decorator(name)  # type: ignore[return-value]


def unregister_backend(name: str) -> None:
    """For tests that register a throwaway backend."""
    BACKENDS.unregister(name)


def backend_names() -> list[str]:
    return BACKENDS.names()


def get_backend(name: str | None = None) -> BackendType:
    chosen = name or os.environ.get(ENV_VAR) or DEFAULT_BACKEND
    try:
        return BACKENDS.get(chosen)
    except UnknownNameError as e:
        source = f" (from {ENV_VAR})" if not name and os.environ.get(ENV_VAR) else ""
        raise SandboxError(f"{e}{source}") from None


def create_sandbox(spec: SandboxSpec, *, name: str | None = None, backend: str | None = None) -> Sandbox:
    """A not-yet-started sandbox of the chosen backend for `spec`."""
    cls = get_backend(backend)
    if spec.internet and Capability.INTERNET not in cls.capabilities:
        raise SandboxError(
            f"sandbox backend {cls.__name__} cannot give a sandbox the internet (no {Capability.INTERNET})"
        )
    return cls(spec, name=name)
