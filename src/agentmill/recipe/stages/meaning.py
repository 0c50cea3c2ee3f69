"""Does a rewritten instruction still ask for what the verifier checks?

The oracle ignores the instruction, so "the oracle still passes" says nothing about a rewrite.
Two checks do:

- mechanical: every anchor of the original instruction that the task's tests reference (a path,
  a file name, a number, a quoted literal, an output format) must appear in the rewrite;
- a judge: the model is asked whether the rewrite asks for exactly what the original asks (its
  answer is cached with every other model answer); anything but a clear yes rejects the rewrite.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from agentmill.recipe.llm_cache import CachedModel

FORMATS = ("json", "jsonl", "csv", "tsv", "yaml", "yml", "toml", "xml", "html", "markdown", "ini", "sql", "parquet")
_PATH = re.compile(r"(?<![\w/.])(?:~|\.{1,2})?/(?:[\w.+-]+/?)+|(?<![\w/.-])[\w+-]+(?:/[\w.+-]+)+/?")
_FILE = re.compile(r"(?<![\w/.-])[\w+-]+(?:\.[\w+-]+)*\.[A-Za-z][A-Za-z0-9]{0,5}(?![\w/])")
_QUOTED = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|“([^”\n]+)”|(?<!\w)'([^'\n]+)'(?!\w)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.M)


@dataclass(frozen=True)
class Anchor:
    kind: str  # path, file, number, literal, format
    text: str

    def __str__(self) -> str:
        return f"{self.kind} {self.text!r}" if self.kind in ("literal",) else f"{self.kind} {self.text}"


def anchors(instruction: str) -> list[Anchor]:
    """Paths, file names, numbers, quoted literals and output formats of an instruction, in order, once each."""
    found: dict[Anchor, None] = {}
    text = _LIST_MARKER.sub(" ", instruction)
    for m in _QUOTED.finditer(text):
        lit = next(g for g in m.groups() if g is not None).strip()
        if len(lit) > 1:  # a lone letter or digit in quotes ("`A`-`Z`") is an example, not a requirement
            found[Anchor("literal", lit)] = None
    paths = [m.group(0).rstrip("/.") for m in _PATH.finditer(text)]
    for p in paths:
        if len(p) > 1:
            found[Anchor("path", p)] = None
    for m in _FILE.finditer(text):
        if not re.fullmatch(r"[A-Za-z]\.[A-Za-z]", m.group(0)):  # "e.g", "i.e"
            found[Anchor("file", m.group(0))] = None
    bare = _PATH.sub(" ", _FILE.sub(" ", text))  # numbers inside paths and file names are not separate anchors
    for m in _NUMBER.finditer(bare):
        found[Anchor("number", m.group(0))] = None
    for fmt in FORMATS:
        if re.search(rf"(?<![\w.]){fmt}(?![\w])", text, re.I):
            found[Anchor("format", fmt)] = None
    return list(found)


def verifier_text(task_dir: Path) -> str:
    """Everything in the task's tests folder, as text (what the verifier can check)."""
    parts = []
    tests = Path(task_dir) / "tests"
    for p in sorted(tests.rglob("*")) if tests.is_dir() else []:
        if p.is_file() and not p.is_symlink() and p.stat().st_size <= 1_000_000:
            parts.append(p.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def referenced(anchor: Anchor, tests: str) -> bool:
    """Whether the tests mention the anchor (a path by itself or by its file name)."""
    if anchor.kind == "number":
        return re.search(rf"(?<![\w.]){re.escape(anchor.text)}(?![\w]|\.\d)", tests) is not None
    if anchor.kind == "format":
        return re.search(rf"(?<![\w]){anchor.text}(?![\w])", tests, re.I) is not None
    if anchor.kind == "path":
        return anchor.text in tests or Path(anchor.text).name in tests
    return _word(anchor.text, tests)


def _word(literal: str, text: str) -> bool:
    """`literal` in `text`, not as part of a longer word ("data" is not in "metadata")."""
    return (
        re.search(
            rf"(?<!\w){re.escape(literal)}(?!\w)" if re.fullmatch(r"\w.*\w|\w", literal) else re.escape(literal), text
        )
        is not None
    )


def present(anchor: Anchor, rewrite: str) -> bool:
    if anchor.kind == "number":
        return re.search(rf"(?<![\w.]){re.escape(anchor.text)}(?![\w]|\.\d)", rewrite) is not None
    if anchor.kind == "format":
        return re.search(rf"(?<![\w]){anchor.text}(?![\w])", rewrite, re.I) is not None
    return anchor.text in rewrite


def lost_anchors(original: str, rewrite: str, tests: str) -> list[Anchor]:
    """The anchors the tests reference that the rewrite lost (empty: the mechanical check passes)."""
    return [a for a in anchors(original) if referenced(a, tests) and not present(a, rewrite)]


JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"same_task": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["same_task", "reason"],
    "additionalProperties": False,
}


def parse_verdict(reply: str) -> tuple[bool | None, str]:
    """(same task?, reason) from the judge's reply; None when the reply says neither."""
    text = reply.strip()
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            data = json.loads(text[start : end + 1])
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("same_task"), bool):
            return data["same_task"], " ".join(str(data.get("reason", "")).split())[:160]
    first = re.match(r"\W*(yes|no)\b", text, re.I)
    if first:
        return first.group(1).lower() == "yes", " ".join(text.split())[:160]
    return None, " ".join(text.split())[:80]


async def judge(model: CachedModel, template: str, original: str, rewrite: str) -> tuple[bool | None, str]:
    prompt = template.replace("{original}", original.strip()).replace("{rewrite}", rewrite.strip())
    reply = await model.ask([{"role": "user", "content": prompt}], json_schema=JUDGE_SCHEMA)
    return parse_verdict(reply)
