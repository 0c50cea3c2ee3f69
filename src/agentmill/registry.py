"""One registry for every extension point: sandbox backends, agents, task kinds, executors, stages,
task filters, recipe source kinds, viewer sources and judged steps.

A registry maps a name to a thing (a class, a factory, a function). Things arrive three ways:
- built in: listed as "module:attr" and imported on first use, so naming them costs no imports and
  they never depend on the package's installed metadata (a source checkout on PYTHONPATH has them);
- registered in code: `registry.register(name, thing)` or the `registry.decorator(name)` form;
- plug-ins: installed packages declaring an entry point in the registry's group, loaded on first use.

Every registry raises the same two errors: `DuplicateNameError` when a second, different thing takes a
taken name, and `UnknownNameError` (with "did you mean") for a name nobody registered.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from agentmill.errors import AgentmillError

T = TypeVar("T")


class DuplicateNameError(AgentmillError, ValueError):
    """A name is already taken by another thing in the same registry."""


class UnknownNameError(AgentmillError, ValueError, LookupError):
    """Nothing is registered under this name."""


def load_target(target: str) -> object:
    """The object a "module:attr" string names."""
    module, _, attr = target.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names to things, for one kind of thing (`what`, as users read it: "sandbox backend")."""

    def __init__(
        self,
        what: str,
        *,
        group: str | None = None,
        builtins: dict[str, str] | None = None,
        check: Callable[[str, T], None] | None = None,
    ):
        self.what = what
        self.group = group  # the entry-point group plug-ins declare, or None
        self._check = check  # validates a thing before it is registered (raises AgentmillError)
        self._things: dict[str, T] = {}
        self._lazy: dict[str, str] = dict(builtins or {})
        self._builtins = dict(builtins or {})
        self._plugins_read = group is None
        self._lock = threading.RLock()

    # -- registering
    def register(self, name: str, thing: T) -> T:
        if self._check is not None:
            self._check(name, thing)
        with self._lock:
            existing = self._things.get(name)
            if existing is not None and existing is not thing and existing != thing:
                raise DuplicateNameError(f"{self.what} '{name}' is already registered ({_describe(existing)})")
            self._things[name] = thing
            self._lazy.pop(name, None)
        return thing

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@registry.decorator("name")` over a class or function registers it under that name."""
        return lambda thing: self.register(name, thing)

    def unregister(self, name: str) -> None:
        """Forget a name (tests register throwaway things); a built-in comes back as its lazy target."""
        with self._lock:
            self._things.pop(name, None)
            if name in self._builtins:
                self._lazy[name] = self._builtins[name]

    # -- looking up
    def get(self, name: str) -> T:
        self._read_plugins()
        with self._lock:
            if name in self._things:
                return self._things[name]
            target = self._lazy.get(name)
        if target is None:
            raise UnknownNameError(self.unknown_message(name))
        thing = load_target(target)
        with self._lock:  # importing the target may have registered it already
            if name in self._things:
                return self._things[name]
        return self.register(name, thing)  # type: ignore[arg-type]

    def names(self) -> list[str]:
        self._read_plugins()
        with self._lock:
            return sorted({*self._things, *self._lazy})

    def all(self, *, on_error: Callable[[str, str, Exception], None] | None = None) -> dict[str, T]:
        """Every thing, in registration order (built-ins and plug-ins imported now). With `on_error`, a
        target that fails to import is reported to it (name, target, error) and left out, not raised."""
        self._read_plugins()
        with self._lock:
            pending = dict(self._lazy)
        for name, target in pending.items():
            try:
                self.get(name)
            except Exception as e:
                if on_error is None:
                    raise
                on_error(name, target, e)
        return self.loaded()

    def loaded(self) -> dict[str, T]:
        """What is registered now, without importing lazy targets (a snapshot)."""
        with self._lock:
            return dict(self._things)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def unknown_message(self, name: str, *, known: list[str] | None = None, what: str | None = None) -> str:
        """One line for a name nobody registered: `known` and `what` narrow the list and the noun."""
        known = self.names() if known is None else known
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return f"unknown {what or self.what} '{name}'{hint} (known: {', '.join(known) or 'none'})"

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        with self._lock:
            if self._plugins_read:
                return
            self._plugins_read = True
            for ep in entry_points(group=self.group or ""):
                if ep.name not in self._things:  # code registrations and built-ins win over metadata
                    self._lazy.setdefault(ep.name, ep.value)


def _describe(thing: object) -> str:
    module = getattr(thing, "__module__", None)
    qualname = getattr(thing, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(thing)
