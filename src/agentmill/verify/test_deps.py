"""Test-time dependencies: the packages a test script installs, resolved when the environment is built.

Container-era test scripts (`run-tests.sh`, `test.sh`) make a venv and install what the tests
import: `uv venv .tbench-testing; source .tbench-testing/bin/activate; uv pip install pytest==8.4.1
rdflib==7.1.4` (or `pip install`, `uv add`, `uvx --with X`). The verifier never gets a network, so
those requests are read from the scripts here and installed, with the network, before the agent
starts (like a Dockerfile's RUN steps), into a layer keyed by what was asked for. The verifier
mounts it read-only at /.agentmill/testdeps and puts it on PYTHONPATH, so every interpreter the
script runs (the image's python, a venv the toolkit's `uv venv` makes) finds the packages, and
`pip install` of them is "already satisfied" offline.

Requested versions are honoured where the registry has a wheel for the verifier's Python; one it
lacks is installed at its newest version and said so. Wheels only (`--only-binary :all:`): an
sdist would run the task's code on the host while it builds. What cannot be resolved at all is
recorded (`unresolved`), and the trial says so: the task's verdict is `test_deps_unresolved`,
never `unsolvable`.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from agentmill.runtime.paths import cache_dir
from agentmill.tasks.hashing import hash_text
from agentmill.tasks.model import Task
from agentmill.verify.test_deps_scan import Requests, requested  # noqa: F401 - re-exported

MOUNT = "/.agentmill/testdeps"
SITE = f"{MOUNT}/site"  # on the verifier's PYTHONPATH
LAYOUT = "1"  # bump when the layer's layout or the resolution rules change
UNRESOLVED_NOTE = "test dependencies unresolved"  # the trial note `check` reads (rollout/check.py)
RETRY_AFTER = 600.0  # seconds: a layer made while the index was unreachable is tried again after this
# What pip prints when the index cannot be reached at all: no package is probed one by one then.
_UNREACHABLE = (
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "Could not fetch URL",
    "Max retries exceeded",
    "ConnectTimeoutError",
    "ProxyError",
)


@dataclass
class TestDeps:
    """A built layer: `path` holds site/ (the packages) and result.json."""

    __test__ = False  # not a pytest class

    path: Path
    installed: list[str]
    unresolved: dict[str, str]  # requirement -> why
    notes: list[str]
    seconds: float = 0.0


def layer_key(packages: list[str], python: str) -> str:
    return hash_text("agentmill-testdeps", LAYOUT, os.path.realpath(python), *sorted(packages))[:16]


def ensure_test_deps(packages: list[str], python: Path, *, root: Path | None = None) -> TestDeps | None:
    """The layer for `packages`, installed with `python`'s pip (the toolkit's) if not cached.
    None when nothing is asked for."""
    if not packages:
        return None
    root = root or cache_dir() / "testdeps"
    dest = root / layer_key(packages, str(python))
    if _fresh(dest):
        return _load(dest)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _fresh(dest):
            return _load(dest)
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        started = time.monotonic()
        installed, unresolved, notes, transient = _resolve(packages, python, tmp / "site")
        (tmp / "unresolved").write_text("".join(f"{k}\t{v}\n" for k, v in unresolved.items()))
        (tmp / "result.json").write_text(
            json.dumps(
                {
                    "installed": installed,
                    "unresolved": unresolved,
                    "notes": notes,
                    "seconds": round(time.monotonic() - started, 3),
                    "transient": transient,
                },
                indent=2,
            )
        )
        subprocess.run(["chmod", "-R", "a+rX,go-w", str(tmp)], check=True)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return _load(dest)


def _fresh(dest: Path) -> bool:
    """A built layer, unless it records an unreachable index and is older than RETRY_AFTER."""
    meta = dest / "result.json"
    if not meta.exists():
        return False
    if json.loads(meta.read_text()).get("transient"):
        return time.time() - meta.stat().st_mtime < RETRY_AFTER
    return True


def _load(dest: Path) -> TestDeps:
    data = json.loads((dest / "result.json").read_text())
    return TestDeps(dest, data["installed"], data["unresolved"], data["notes"], data.get("seconds", 0.0))


def _pip(python: Path, target: Path, specs: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-input",
            "--retries",
            "2",
            "--timeout",
            "30",
            "--only-binary",
            ":all:",
            "--target",
            str(target),
            *specs,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
        env={
            k: v
            for k, v in os.environ.items()
            if k not in ("PIP_NO_INDEX", "PIP_TARGET", "PIP_USER", "PIP_REQUIRE_VIRTUALENV", "PIP_PREFIX")
        },
    )


def _resolve(packages: list[str], python: Path, site: Path) -> tuple[list[str], dict[str, str], list[str], bool]:
    """Install all together; if that fails, find which ones fail alone, replace a missing version
    by the newest, and install what is left. The last value: the index could not be reached (the
    result is kept a while, then tried again)."""
    together = _pip(python, site, packages)
    if together.returncode == 0:
        return list(packages), {}, [], False
    if any(s in (together.stderr or "") + (together.stdout or "") for s in _UNREACHABLE):
        why = f"the package index could not be reached: {_last_line(together)}"
        return [], {spec: why for spec in packages}, [], True
    chosen, unresolved, notes = [], {}, []
    for spec in packages:
        probe = site.with_name(site.name + ".probe")
        shutil.rmtree(probe, ignore_errors=True)
        alone = _pip(python, probe, [spec])
        if alone.returncode == 0:
            chosen.append(spec)
            continue
        name = re.split(r"[\[=<>!~]", spec, maxsplit=1)[0]
        if name != spec and _pip(python, probe, [name]).returncode == 0:
            chosen.append(name)
            notes.append(f"{spec}: no wheel of that version for this Python; installed the newest {name}")
            continue
        unresolved[spec] = _last_line(alone)
    shutil.rmtree(site.with_name(site.name + ".probe"), ignore_errors=True)
    shutil.rmtree(site, ignore_errors=True)
    if chosen:
        together = _pip(python, site, chosen)
        if together.returncode != 0:  # each installs alone, not together: a conflict among them
            unresolved.update({s: f"conflicts with the others: {_last_line(together)}" for s in chosen})
            chosen = []
            shutil.rmtree(site, ignore_errors=True)
    return chosen, unresolved, notes, False


def _last_line(run: subprocess.CompletedProcess) -> str:
    lines = [line for line in (run.stderr or run.stdout or "").strip().splitlines() if line.strip()]
    err = [line for line in lines if line.startswith("ERROR")]
    return (err[0] if err else lines[-1] if lines else f"pip exited {run.returncode}")[:300]


def prepare(task: Task) -> tuple[TestDeps | None, list[str]]:
    """The task's layer, built if missing (network: this runs with the environment's build), and the
    trial notes about it."""
    from agentmill.verify.toolkit import ensure_toolkit

    asked = requested(task)
    notes = [
        f"test script installs '{s}': not resolvable before the run (a variable or a path); skipped"
        for s in asked.skipped
    ]
    if not asked.packages:
        return None, notes
    toolkit = ensure_toolkit(build=True)
    if toolkit is None:
        return None, [*notes, f"{UNRESOLVED_NOTE}: {', '.join(asked.packages)} (the verifier toolkit is unavailable)"]
    deps = ensure_test_deps(asked.packages, toolkit / "venv/bin/python")
    assert deps is not None  # None only when nothing is asked for
    notes += deps.notes
    if deps.unresolved:
        notes.append(f"{UNRESOLVED_NOTE}: " + "; ".join(f"{k} ({v})" for k, v in deps.unresolved.items()))
    return deps, notes
