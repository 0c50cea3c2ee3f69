"""Package faces whose names load on first use.

A face that imports its modules eagerly makes every `import agentmill.X.cli` (and so every CLI
start, `--help` included) pay for sandboxes, agents and pydantic models it never touches. A face
built here maps each public name to the module that defines it and imports that module on first
access; afterwards the name is a plain attribute.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`. `where`: name -> module ("module:attr" when the name differs)."""

    def __getattr__(name: str) -> Any:
        target = where.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
