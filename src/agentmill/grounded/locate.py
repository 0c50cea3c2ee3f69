"""Deterministic extraction of one fact from its file (cell, row+field, JSON path, text span),
and the comparison of an extracted value with the value a model claimed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentmill.grounded import readers
from agentmill.grounded.records import Locator


def extract(path: Path, loc: Locator) -> str | None:
    """The value at `loc` in the file, or None when the locator does not resolve."""
    try:
        if loc.kind == "cell":
            if not loc.cell or readers.fmt(path) != "xlsx":
                return None
            return readers.cell(path, loc.sheet, loc.cell)
        if loc.kind == "row_field":
            if loc.row is None or not loc.field:
                return None
            rows = readers.table(path, loc.sheet)
            if loc.row > len(rows) or loc.field not in rows[loc.row - 1]:
                return None
            return rows[loc.row - 1][loc.field]
        if loc.kind == "json_path":
            node = json.loads(path.read_text(encoding="utf-8"))
            for part in (loc.path or "").split("."):
                node = node[int(part)] if isinstance(node, list) else node[part]
            return node if isinstance(node, str) else json.dumps(node)
        if loc.kind == "span":
            text = _squash(readers.plain_text(path))
            return loc.text if loc.text and _squash(loc.text) in text else None
    except (readers.UnreadableFile, KeyError, IndexError, ValueError, TypeError, OSError):
        return None
    return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def same_value(extracted: str | None, claimed: str) -> bool:
    """Numbers compare as numbers (1e-6 relative), text after whitespace and case folding."""
    if extracted is None:
        return False
    a, b = _number(extracted), _number(claimed)
    if a is not None and b is not None:
        return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
    return _squash(str(extracted)) == _squash(claimed)


def _number(text: str) -> float | None:
    try:
        return float(str(text).replace(",", "").strip())
    except ValueError:
        return None
