"""A Dockerfile reader for the instructions a container-less build can honour.

Parses into a flat list of `Instruction`s (continuations joined, comments dropped, heredocs
attached) and substitutes build variables the way Docker does for WORKDIR/ENV/COPY/ADD/USER.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from agentmill.errors import TaskError

_HEREDOC = re.compile(r"<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2")


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    args: str  # raw text after the keyword (continuations joined)
    line: int  # 1-based line where it starts
    heredoc: str | None = None  # body of a `<<EOF` here-document, if any
    heredoc_end: str = ""  # its terminator word

    def exec_form(self) -> list[str] | None:
        """The JSON array form (`RUN ["a", "b"]`), or None for shell form."""
        text = self.args.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                return None
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return value
        return None


def parse_dockerfile(path: Path) -> list[Instruction]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(path, f"unreadable Dockerfile: {e}") from None
    out: list[Instruction] = []
    i = 0
    while i < len(lines):
        start = i
        raw = lines[i]
        i += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        text = raw.rstrip()
        while text.endswith("\\") and i < len(lines):
            text = text[:-1]
            while i < len(lines) and lines[i].lstrip().startswith("#"):  # comments inside a continuation
                i += 1
            if i < len(lines):
                text += " " + lines[i].strip()
                i += 1
            text = text.rstrip()
        parts = text.strip().split(None, 1)
        keyword = parts[0].upper()
        args = parts[1] if len(parts) > 1 else ""
        heredoc, heredoc_end = None, ""
        m = _HEREDOC.search(args) if keyword in {"RUN", "COPY", "ADD"} else None
        if m:
            body = []
            terminator = m.group(3)
            while i < len(lines) and (lines[i].strip() if m.group(1) else lines[i]) != terminator:
                body.append(lines[i].lstrip("\t") if m.group(1) else lines[i])
                i += 1
            if i >= len(lines):
                raise TaskError(path, f"line {start + 1}: here-document '{terminator}' is never closed")
            i += 1
            heredoc, heredoc_end = "\n".join(body) + "\n", terminator
        out.append(Instruction(keyword, args, start + 1, heredoc, heredoc_end))
    if not out:
        raise TaskError(path, "empty Dockerfile")
    return out


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def substitute(text: str, variables: dict[str, str]) -> str:
    """Docker's build-time substitution: $VAR, ${VAR}, ${VAR:-default}, ${VAR:+alt}."""

    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(4)
        value = variables.get(name, "")
        if m.group(2) == "-":
            return value or m.group(3)
        if m.group(2) == "+":
            return m.group(3) if value else ""
        return value

    return _VAR.sub(repl, text)


def parse_env(args: str) -> dict[str, str]:
    """ENV/ARG/LABEL key=value pairs (quoted values allowed), or the legacy `ENV key value` form."""
    tokens = shlex.split(args, posix=True)
    if tokens and "=" not in tokens[0]:
        return {tokens[0]: args.split(None, 1)[1].strip() if len(tokens) > 1 else ""}
    pairs = {}
    for tok in tokens:
        key, _, value = tok.partition("=")
        pairs[key] = value
    return pairs


def split_flags(args: str) -> tuple[dict[str, str], list[str]]:
    """`--chown=a --from=b src dest` -> ({chown: a, from: b}, [src, dest]); JSON form too."""
    text = args.strip()
    flags: dict[str, str] = {}
    while text.startswith("--"):
        flag, _, text = text.partition(" ")
        key, _, value = flag[2:].partition("=")
        flags[key] = value
        text = text.strip()
    if text.startswith("["):
        try:
            return flags, list(json.loads(text))
        except json.JSONDecodeError:
            pass
    return flags, shlex.split(text)
