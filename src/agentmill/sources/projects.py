"""A Python project to mine bugs from: a pinned PyPI sdist or a local git checkout, split into its
library code (where bugs go) and its test suite (what finds them)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError

TEST_DIRS = {"test", "tests", "testing"}
SKIP_DIRS = {".git", "docs", "doc", "build", "dist", "examples", "benchmarks", "bench", ".tox", "__pycache__"}
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")


@dataclass
class Project:
    label: str  # name-version (PyPI) or folder@commit (git)
    root: Path  # the project's files, as the task's /app will hold them
    dependencies: list[str] = field(default_factory=list)  # requirement strings, from the registry at build time
    tests: list[Path] = field(default_factory=list)  # top-level test files and folders, relative to root
    sources: list[Path] = field(default_factory=list)  # library .py files, relative to root


def from_pypi(pin: str, work: Path) -> Project:
    """`pip download --no-binary :all: --no-deps NAME==VERSION`: the source distribution, unpacked.

    pip prepares an sdist's metadata by running its build backend (the project's setup.py): project
    code, so the download runs in a sandbox with the network, like an image build step."""
    if not PIN.match(pin):
        raise AgentmillError(f"--pypi {pin!r}: give a pinned NAME==VERSION (for example toolz==0.12.1)")
    dl = work / "download"
    dl.mkdir(parents=True)
    from agentmill.sources.folders import run_sync

    res = run_sync(_sandboxed_download(pin, dl))
    archives = sorted(p for p in dl.iterdir() if p.is_file() and not p.is_symlink())
    if res.returncode != 0 or len(archives) != 1:
        raise AgentmillError(f"pip download {pin}: no source distribution ({res.output.strip()[-400:]})")
    unpacked = work / "unpacked"
    _unpack(archives[0], unpacked)
    tops = [p for p in unpacked.iterdir() if p.is_dir()]
    root = tops[0] if len(tops) == 1 else unpacked
    deps = _sdist_requirements(root)
    return _classify(Project(label=pin.replace("==", "-"), root=root, dependencies=deps))


async def _sandboxed_download(pin: str, dest: Path):
    from agentmill.runtime.paths import ensure_traversable, scratch_temp
    from agentmill.sandbox.protocol import SandboxSpec
    from agentmill.sandbox.registry import create_sandbox

    scratch = scratch_temp("pip-download")
    out = scratch / "out"
    (scratch / "rootfs").mkdir()
    out.mkdir()
    ensure_traversable(out)
    spec = SandboxSpec(
        rootfs=scratch / "rootfs",
        rw_mounts={"/dl": out},
        workdir="/tmp",
        network=True,
        env={
            "HOME": "/tmp",
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        },
    )
    try:
        async with create_sandbox(spec) as sb:
            res = await sb.exec(
                [
                    "/usr/bin/python3",
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-binary",
                    ":all:",
                    "--no-deps",
                    pin,
                    "-d",
                    "/dl",
                ],
                timeout=600,
            )
        for f in out.iterdir():
            if f.is_file() and not f.is_symlink():
                shutil.copyfile(f, dest / f.name)
        return res
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def from_repo(repo: Path, work: Path) -> Project:
    """The tracked files of a local git checkout (untracked build output and .git left behind)."""
    repo = repo.expanduser().resolve()
    if not repo.is_dir():
        raise AgentmillError(f"--repo {repo}: not a folder")
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True)
    if listed.returncode != 0:
        raise AgentmillError(
            f"--repo {repo}: not a git checkout ({listed.stderr.decode(errors='replace').strip()[:200]})"
        )
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    root = work / "unpacked" / repo.name
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = repo / rel
        if src.is_file() and not src.is_symlink():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / rel)
    label = f"{repo.name}@{head.stdout.strip() or 'worktree'}"
    return _classify(Project(label=label, root=root, dependencies=_pyproject_requirements(root)))


def _unpack(archive: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    if archive.name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tar")):
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")  # no links out, no devices, no absolute paths
    elif archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():
                target = (dest / member).resolve()
                if not target.is_relative_to(dest.resolve()):
                    raise AgentmillError(f"{archive.name}: member {member!r} escapes the archive")
            z.extractall(dest)
    else:
        raise AgentmillError(f"{archive.name}: not a source archive pip would make")


def _active(requirement: str) -> str | None:
    """The requirement without its marker, when the marker holds here and names no extra."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    if req.marker is not None:
        if "extra" in str(req.marker):
            return None
        if not req.marker.evaluate():
            return None
    req.marker = None
    return str(req)


def _sdist_requirements(root: Path) -> list[str]:
    info = root / "PKG-INFO"
    lines = info.read_text(encoding="utf-8", errors="replace").splitlines() if info.is_file() else []
    reqs = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
    return sorted(filter(None, map(_active, reqs))) or _pyproject_requirements(root)


def _pyproject_requirements(root: Path) -> list[str]:
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return []
    return sorted(filter(None, map(_active, data.get("project", {}).get("dependencies", []) or [])))


def _is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _classify(project: Project) -> Project:
    root = project.root
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and entry.name in TEST_DIRS and any(entry.rglob("*.py")):
            project.tests.append(entry.relative_to(root))
        elif entry.is_file() and (_is_test_file(entry.name) or entry.name == "conftest.py"):
            project.tests.append(entry.relative_to(root))
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        parts = set(rel.parts[:-1])
        if parts & (SKIP_DIRS | TEST_DIRS) or any(p.endswith(".egg-info") for p in rel.parts) or path.is_symlink():
            continue
        if rel.name in {"setup.py", "conftest.py", "noxfile.py", "fabfile.py"} or _is_test_file(rel.name):
            continue
        if len(rel.parts) == 1 and rel.name.startswith(("_version", "version")):
            continue
        project.sources.append(rel)
    if not any(_is_test_file(p.name) or p.is_dir() for p in (root / t for t in project.tests)):
        raise AgentmillError(
            f"{project.label}: no test suite at the top of the project (test_*.py files or a "
            "tests/ folder); repo_bugs needs the project's own tests"
        )
    if not project.sources:
        raise AgentmillError(f"{project.label}: no library code (.py files outside the tests) to plant bugs in")
    return project
