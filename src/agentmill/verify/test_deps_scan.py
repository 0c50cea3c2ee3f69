"""What a task's test scripts ask to install, read from the scripts themselves.

`uv pip install X==Y ...`, `pip install`/`pip3 install`/`python -m pip install` (line continuations,
`sudo`, `VAR=x` prefixes), `uv add`, `uvx --with X`/`-w X`/`uvx tool==V`, `uv run --with X`, and
`-r FILE` from the task's own tests folder. What cannot be known before the run (`$VAR`, `-e .`,
paths) is listed as skipped. verify/test_deps.py resolves the packages into the test-deps layer.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.tasks.model import Task

# A requirement as scripts write it: name, extras, one or more version clauses.
_REQ = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?((===?|~=|!=|<=?|>=?)[A-Za-z0-9.*+!_-]+"
    r"(,(===?|~=|!=|<=?|>=?)[A-Za-z0-9.*+!_-]+)*)?$"
)
_VALUE_FLAGS = {
    "-i",
    "--index-url",
    "--extra-index-url",
    "-c",
    "--constraint",
    "--python",
    "-p",
    "--target",
    "-t",
    "--prefix",
    "--root",
    "-f",
    "--find-links",
    "--index",
    "--default-index",
    "--directory",
    "--project",
    "--group",
    "--optional",
    "--extra",
    "--python-platform",
    "--only-binary",
    "--no-binary",
}
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
        while words and (
            words[0] in {"sudo", "exec", "time", "then", "do", "else", "!"}
            or "=" in words[0].split("/")[0]
            and not words[0].startswith("-")
        ):
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
    if (re.fullmatch(r"pip[0-9.]*", prog) and rest[:1] == ["install"]) or (prog == "uv" and rest[:1] == ["add"]):
        _install_args(rest[1:], out, test_dirs)
    elif prog == "uvx" or (prog == "uv" and rest[:2] == ["tool", "run"]) or (prog == "uv" and rest[:1] == ["run"]):
        _tool_args(
            rest[2:] if prog == "uv" and rest[0] == "tool" else rest[1:] if prog == "uv" else rest,
            out,
            tool=prog == "uvx" or rest[0] == "tool",
        )


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
    if _REQ.match(spec.replace(" ", "")):
        out.add(spec.replace(" ", ""))
    else:  # `$VAR`, a path, `.`, a URL: not a requirement known before the run
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
