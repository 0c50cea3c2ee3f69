"""Quality gates on what the model roles make, beside the structural checks (spec.validate,
assemble's selection check); each failure goes back to the model with the reason.

- Traceable rubric: every positive criterion must ask for something the agent was asked for. Its
  requirement's content words (stemmed) must mostly occur in what the agent reads (the statement
  and the deliverables' names, columns, sheets and sections). A rubric whose heaviest criterion
  asks for something the instruction never requests rewards guessing the hidden rubric.
- Confusers that could confuse: a confuser must be of the core file's family (tables with tables,
  documents with documents) and share its subject: at least one content word of its name or
  opening (a table's header, a document's first lines) with a core file's.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentmill.grounded import readers
from agentmill.grounded.patterns import FORMAT_FAMILY
from agentmill.grounded.records import Spec
from agentmill.grounded.words import FUNCTION_WORDS

MIN_TRACE = 0.5
_WORD = re.compile(r"[a-z][a-z]{2,}")
# words every criterion may use without asking for anything: a criterion's boilerplate
_STOP = FUNCTION_WORDS | {
    "must",
    "should",
    "shows",
    "show",
    "gives",
    "give",
    "states",
    "state",
    "includes",
    "include",
    "contains",
    "contain",
    "correct",
    "correctly",
    "value",
    "values",
    "data",
    "file",
    "files",
    "csv",
    "xlsx",
    "docx",
    "json",
    "txt",
    "all",
    "any",
    "one",
    "its",
    "are",
    "has",
    "not",
    "per",
    "than",
    "then",
    "there",
    "where",
    "what",
    "who",
    "how",
}
_GROUP = {"spreadsheet": "table", "tabular": "table", "structured": "structured", "document": "document"}


def stem(word: str) -> str:
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:6]


def stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower().replace("_", " ")) if w not in _STOP}


def untraceable(spec: Spec, instruction_text: str) -> list[str]:
    """Problems for the compiler: criteria whose requirement the instruction does not ask for."""
    asked = stems(instruction_text)
    problems = []
    for c in spec.criteria:
        words = stems(c.requirement)
        if not words:
            continue
        found = len(words & asked) / len(words)
        if found < MIN_TRACE:
            missing = sorted(words - asked)
            problems.append(
                f"criterion {c.id} asks for something the statement never requests "
                f"({found:.0%} of its requirement's words are in the instruction; not there: {', '.join(missing)}): "
                "ask for it in the statement or drop the criterion"
            )
    return problems


# Words any table or note may have: sharing them is no shared subject.
_GENERIC = {
    stem(w)
    for w in (
        "year",
        "date",
        "month",
        "day",
        "time",
        "name",
        "type",
        "min",
        "max",
        "total",
        "count",
        "number",
        "first",
        "last",
        "code",
        "description",
        "notes",
        "source",
        "index",
        "unnamed",
    )
}


def family(path: str) -> str:
    return _GROUP.get(FORMAT_FAMILY.get(path.rsplit(".", 1)[-1].lower(), "other"), "other")


def subject(path: Path, rel: str) -> set[str]:
    """Content words of a file's name (inside its source folder) and opening."""
    words = stems(re.sub(r"[/._-]+", " ", rel.partition("/")[2] or rel))
    try:
        if family(rel) == "table":
            rows = readers.table(path)
            words |= stems(" ".join(rows[0].keys())) if rows else set()
        else:
            words |= stems(readers.plain_text(path, limit=600))
    except (readers.UnreadableFile, OSError, ValueError, IndexError):
        pass
    return words - _GENERIC


def confuser_problems(picks: list[tuple[str, str, Path]]) -> list[str]:
    """picks: (name as selected, role, file on disk). Problems for the assembler."""
    cores = [(name, path) for name, role, path in picks if role == "core"]
    problems = []
    for name, role, path in picks:
        if role != "confuser":
            continue
        same = [c for c, _ in cores if family(c) == family(name)]
        if not same:
            problems.append(
                f"confuser {name} is a {family(name)} file, but the core files are {sorted({family(c) for c, _ in cores})}: "
                "a confuser must be of a core file's family"
            )
            continue
        mine = subject(path, name)
        if not any(mine & subject(p, c) for c, p in cores if family(c) == family(name)):
            problems.append(
                f"confuser {name} shares no subject with the core files (no word of its name or opening "
                "in theirs): a reader would not mistake it for them"
            )
    return problems
