"""The source kinds as pyproject.toml declares them, also before the package is reinstalled (a
worktree's new entry points reach the installed metadata only with `pip install -e .`)."""

import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from agentmill.recipe import source_kinds


@pytest.fixture
def declared_source_kinds(monkeypatch):
    data = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = data["project"]["entry-points"][source_kinds.GROUP]
    eps = {name: EntryPoint(name, value, source_kinds.GROUP) for name, value in declared.items()}
    monkeypatch.setattr(source_kinds, "_producers", lambda: eps)
    return eps
