"""Deterministic extraction of one fact from its file (cell, row+field, JSON path, text span),
and the comparison of an extracted value with the value a model claimed."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from agentmill.grounded import readers
from agentmill.grounded.records import Locator


def extract(path: Path, loc: Locator) -> str | None:
    """The value at `loc` in the file, or None when the locator does not resolve."""
    try:
        if loc.kind == "cell":
            if not loc.cell or readers.fmt(path) != "xlsx":
                return None
            return _cell(str(path), _stamp(path), loc.sheet, loc.cell)
        if loc.kind == "row_field":
            if loc.row is None or not loc.field:
                return None
            rows = _table(str(path), _stamp(path), loc.sheet)
            if loc.row > len(rows) or loc.field not in rows[loc.row - 1]:
                return None
            return rows[loc.row - 1][loc.field]
        if loc.kind == "json_path":
            node = json.loads(path.read_text(encoding="utf-8"))
            for part in (loc.path or "").split("."):
                node = node[int(part)] if isinstance(node, list) else node[part]
            return node if isinstance(node, str) else json.dumps(node)
        if loc.kind == "span":
            text = _text(str(path), _stamp(path))
            return loc.text if loc.text and _squash(loc.text) in text else None
    except (readers.UnreadableFile, KeyError, IndexError, ValueError, TypeError, OSError):
        return None
    return None


# A graph checks many facts per file: parse each file once (keyed by its modification stamp).
def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=64)
def _table(path: str, _stamp, sheet: str | None) -> list[dict[str, str]]:
    return readers.table(Path(path), sheet)


@lru_cache(maxsize=64)
def _text(path: str, _stamp) -> str:
    return _squash(readers.plain_text(Path(path)))


@lru_cache(maxsize=16)
def _workbook(path: str, _stamp):
    import openpyxl

    return openpyxl.load_workbook(path, data_only=True)


def _cell(path: str, stamp, sheet: str | None, ref: str) -> str | None:
    wb = _workbook(path, stamp)
    if sheet is not None and sheet not in wb.sheetnames:
        return None
    value = (wb[sheet] if sheet else wb.worksheets[0])[ref].value
    return None if value is None else readers._text(value)


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
