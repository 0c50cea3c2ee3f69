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
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.paths import cache_dir
from agentmill.tasks.hashing import hash_text
from agentmill.tasks.model import Task

MOUNT = "/.agentmill/testdeps"
SITE = f"{MOUNT}/site"  # on the verifier's PYTHONPATH
LAYOUT = "1"  # bump when the layer's layout or the resolution rules change
UNRESOLVED_NOTE = "test dependencies unresolved"  # the trial note `check` reads (rollout/check.py)
RETRY_AFTER = 600.0  # seconds: a layer made while the index was unreachable is tried again after this
# What pip prints when the index cannot be reached at all: no package is probed one by one then.
_UNREACHABLE = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable",
                "Could not fetch URL", "Max retries exceeded", "ConnectTimeoutError", "ProxyError")

# A requirement as scripts write it: name, extras, one or more version clauses.
_REQ = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?((===?|~=|!=|<=?|>=?)[A-Za-z0-9.*+!_-]+"
                  r"(,(===?|~=|!=|<=?|>=?)[A-Za-z0-9.*+!_-]+)*)?$")
_VALUE_FLAGS = {"-i", "--index-url", "--extra-index-url", "-c", "--constraint", "--python", "-p", "--target", "-t",
                "--prefix", "--root", "-f", "--find-links", "--index", "--default-index", "--directory", "--project",
                "--group", "--optional", "--extra", "--python-platform", "--only-binary", "--no-binary"}
_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")


@dataclass
class Requests:
    """What a task's test scripts ask to install, and what could not be read from them."""

    packages: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # e.g. `pip install $PKG`, `-e .`

    def add(self, spec: str) -> None:
        if spec not in self.packages:
            self.packages.append(spec)


def requested(task: Task, tests: Path | None = None) -> Requests:
    """The packages the task's shell scripts under /tests (and the test script itself) install."""
    out = Requests()
    scripts: list[Path] = []
    for src in task.tests_sources:
        if src.is_dir():
            scripts += sorted(p for p in src.rglob("*.sh") if p.is_file())
        elif src.is_file() and (src.suffix == ".sh" or src.name == task.test_script):
            scripts.append(src)
    for script in scripts:
        _scan(script.read_text(errors="replace"), out, [s for s in task.tests_sources if s.is_dir()])
    return out


def _scan(text: str, out: Requests, test_dirs: list[Path]) -> None:
    text = re.sub(r"\\\n", " ", text)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    for command in _SEPARATORS.split("\n".join(lines)):
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            continue
        while words and (words[0] in {"sudo", "exec", "time", "then", "do", "else", "!"} or "=" in words[0].split("/")[0]
                         and not words[0].startswith("-")):
            words = words[1:]  # `VAR=x pip install`, `sudo pip install`, `then uv pip install`
        _command(words, out, test_dirs)


def _command(words: list[str], out: Requests, test_dirs: list[Path]) -> None:
    if not words:
        return
    prog = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if re.fullmatch(r"python[0-9.]*", prog) and rest[:2] == ["-m", "pip"]:
        prog, rest = "pip", rest[2:]
    if prog == "uv" and rest[:1] == ["pip"]:
        prog, rest = "pip", rest[1:]
    if re.fullmatch(r"pip[0-9.]*", prog) and rest[:1] == ["install"]:
        _install_args(rest[1:], out, test_dirs)
    elif prog == "uv" and rest[:1] == ["add"]:
        _install_args(rest[1:], out, test_dirs)
    elif prog == "uvx" or (prog == "uv" and rest[:2] == ["tool", "run"]) or (prog == "uv" and rest[:1] == ["run"]):
        _tool_args(rest[2:] if prog == "uv" and rest[0] == "tool" else rest[1:] if prog == "uv" else rest, out,
                   tool=prog == "uvx" or rest[0] == "tool")


def _install_args(args: list[str], out: Requests, test_dirs: list[Path]) -> None:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-r", "--requirement", "--requirements"):
            _requirements_file(args[i + 1] if i + 1 < len(args) else "", out, test_dirs)
            i += 2
            continue
        if a in ("-e", "--editable"):
            out.skipped.append(f"{a} {args[i + 1] if i + 1 < len(args) else ''}".strip())
            i += 2
            continue
        if a in _VALUE_FLAGS:
            i += 2
            continue
        if not a.startswith("-"):
            _package(a, out)
        i += 1


def _tool_args(args: list[str], out: Requests, *, tool: bool) -> None:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-w", "--with", "--from"):
            if i + 1 < len(args):
                for spec in args[i + 1].split(","):
                    _package(spec, out)
            i += 2
            continue
        if a.startswith(("--with=", "--from=")):
            for spec in a.split("=", 1)[1].split(","):
                _package(spec, out)
        elif a in _VALUE_FLAGS or a in ("--with-requirements",):
            i += 2
            continue
        elif not a.startswith("-"):
            if tool and ("==" in a or "@" in a):  # `uvx pytest==8.4.1`, `uvx ruff@0.6.0`
                _package(a.replace("@", "==", 1), out)
            return  # the command itself; its own arguments are not requirements
        i += 1


def _package(spec: str, out: Requests) -> None:
    spec = spec.strip().strip("'\"")
    if not spec:
        return
    if "$" in spec or "/" in spec or spec in (".", ".."):
        out.skipped.append(spec)
    elif _REQ.match(spec.replace(" ", "")):
        out.add(spec.replace(" ", ""))
    else:
        out.skipped.append(spec)


def _requirements_file(path: str, out: Requests, test_dirs: list[Path]) -> None:
    """`-r /tests/requirements.txt` (or `$TEST_DIR/...`): read from the task's own tests folder."""
    name = re.sub(r"^(\$\{?TEST_DIR\}?|/tests)/", "", path)
    for root in test_dirs:
        f = root / name
        if f.is_file() and f.resolve().is_relative_to(root.resolve()):
            for line in f.read_text(errors="replace").splitlines():
                line = line.split("#", 1)[0].strip()
                if line and not line.startswith("-"):
                    _package(line.split(";")[0], out)
            return
    out.skipped.append(f"-r {path}")


# -- the layer ------------------------------------------------------------------------------


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
        (tmp / "result.json").write_text(json.dumps({"installed": installed, "unresolved": unresolved, "notes": notes,
                                                     "seconds": round(time.monotonic() - started, 3),
                                                     "transient": transient}, indent=2))
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
    return subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-input",
                           "--retries", "2", "--timeout", "30", "--only-binary", ":all:", "--target", str(target), *specs],
                          capture_output=True, text=True, timeout=900, env={k: v for k, v in os.environ.items()
                               if k not in ("PIP_NO_INDEX", "PIP_TARGET", "PIP_USER", "PIP_REQUIRE_VIRTUALENV", "PIP_PREFIX")})


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
    notes = [f"test script installs '{s}': not resolvable before the run (a variable or a path); skipped"
             for s in asked.skipped]
    if not asked.packages:
        return None, notes
    toolkit = ensure_toolkit(build=True)
    if toolkit is None:
        return None, [*notes, f"{UNRESOLVED_NOTE}: {', '.join(asked.packages)} (the verifier toolkit is unavailable)"]
    deps = ensure_test_deps(asked.packages, toolkit / "venv/bin/python")
    notes += deps.notes
    if deps.unresolved:
        notes.append(f"{UNRESOLVED_NOTE}: " + "; ".join(f"{k} ({v})" for k, v in deps.unresolved.items()))
    return deps, notes
