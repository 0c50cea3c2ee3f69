"""Shared fixtures. Tests use the real sandbox, real builds and real files; no mocks of those."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentmill.images import ImageBuilder
from agentmill.tasks import write_task

# The suite's own tasks need nothing beyond the host's userland; the tests of Debian-built images
# choose their builder explicitly. So a task that would need a real image says so here instead of
# downloading Debian in the middle of an unrelated test (tests/images/test_build.py checks the
# default itself).
os.environ.setdefault("AGENTMILL_IMAGES", "host")

REWARD_IF = (
    "#!/bin/bash\nif {cond}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
)


# Packages whose expensive fixtures are package- or session-scoped: with `pytest -n 2 --dist loadgroup`
# (the README's test command) each package runs on one worker, so its fixtures are built once; every
# other file is its own group, so module fixtures are built once too.
WHOLE_PACKAGE_GROUPS = ("rl", "view")


def pytest_collection_modifyitems(config, items) -> None:
    root = Path(__file__).parent
    for item in items:
        rel = Path(item.path).relative_to(root)
        group = rel.parts[0] if rel.parts[0] in WHOLE_PACKAGE_GROUPS else str(rel)
        item.add_marker(pytest.mark.xdist_group(group))


def needs_sandbox() -> bool:
    return shutil.which("bwrap") is not None


sandbox = pytest.mark.skipif(not needs_sandbox(), reason="bubblewrap not installed")


def _session_prefix(basetemp: Path) -> str:
    return f"{basetemp.parent.name}-{basetemp.name}-"  # e.g. pytest-389-popen-gw0-


def pytest_sessionfinish(session) -> None:
    """This session's test caches go with it (images copied for its tests)."""
    from agentmill.runtime.paths import scratch_dir

    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    prefix = _session_prefix(factory.getbasetemp())
    for path in (scratch_dir() / "test-cache").glob(prefix + "*"):
        shutil.rmtree(path, ignore_errors=True)


def scratch_cache(tmp_path: Path) -> Path:
    """A private image cache that sandbox uids can reach (pytest's tmp dirs are 0700)."""
    from agentmill.runtime.paths import scratch_dir

    # the session and worker too: a test of the same name in another pytest run or worker on this
    # machine (scratch is machine-wide) must not share, and wipe, this one's cache mid-test
    path = scratch_dir() / "test-cache" / (_session_prefix(tmp_path.parent) + tmp_path.name)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    for p in (path, path.parent):
        p.chmod(0o711)
    return path


@pytest.fixture(scope="session")
def builder(tmp_path_factory) -> ImageBuilder:
    return ImageBuilder()


def simple_task(
    root: Path,
    name: str = "hello",
    *,
    test_sh: str | None = None,
    solve_sh: str | None = "echo hello > /app/out.txt\n",
    dockerfile: str = "FROM debian:bookworm-slim\nWORKDIR /app\n",
    **kw,
) -> Path:
    return write_task(
        root / name,
        instruction="Write the word hello into /app/out.txt.",
        test_sh=test_sh or REWARD_IF.format(cond="grep -qx hello /app/out.txt"),
        solve_sh=solve_sh,
        dockerfile=dockerfile,
        **kw,
    )


def mixed_dataset(root: Path, good: int) -> Path:
    """`good` tasks the oracle solves (each with its own content hash) and one, `bad`, it does not."""
    for i in range(good):
        simple_task(root, f"good{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    simple_task(root, "bad", solve_sh="echo nope > /app/out.txt\n")
    return root
