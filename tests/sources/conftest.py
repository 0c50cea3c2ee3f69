"""The generator source kinds are built into the source-kind registry (recipe/source_kinds.py), so
they need no installed metadata; the fixture names them for the tests that mix them in a recipe."""

import pytest

from agentmill.recipe.source_kinds import source_kinds

GENERATORS = ("functions", "repo_bugs", "stackexchange", "generate")


@pytest.fixture
def declared_source_kinds():
    known = source_kinds()
    assert all(kind in known for kind in GENERATORS), known
    return GENERATORS
