"""Reading real source files (csv, xlsx, docx, pdf, json, md, txt) with real libraries.

Sources are the user's own folders or the bundled corpus, read on the host. Output is capped, so
one huge file cannot flood an index or a prompt.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from agentmill.errors import AgentmillError

READABLE = {".csv", ".tsv", ".xlsx", ".docx", ".pdf", ".json", ".md", ".txt"}
MAX_BYTES = 32 << 20


class UnreadableFile(AgentmillError):
    """A source file that cannot be read as its format says."""


def fmt(path: Path) -> str:
    return path.suffix.lower().lstrip(".")


def table(path: Path, sheet: str | None = None) -> list[dict[str, str]]:
    """Rows of a csv/tsv file or an xlsx sheet (first row = header), values as text."""
    try:
        if fmt(path) in ("csv", "tsv"):
            with open(path, newline="", encoding="utf-8-sig") as fh:
                return list(csv.DictReader(fh, delimiter="\t" if fmt(path) == "tsv" else ","))
        if fmt(path) == "xlsx":
            ws = _sheet(path, sheet)
            it = ws.iter_rows(values_only=True)
            header = [str(h) if h is not None else "" for h in next(it, ())]
            return [{h: "" if v is None else _text(v) for h, v in zip(header, row)} for row in it]
    except (OSError, UnicodeDecodeError, csv.Error, KeyError, ValueError) as e:
        raise UnreadableFile(f"{path}: {type(e).__name__}: {e}") from None
    raise UnreadableFile(f"{path}: not a table (format {fmt(path)})")


def _sheet(path: Path, sheet: str | None, data_only: bool = True):
    import openpyxl

    wb = openpyxl.load_workbook(path, read_only=True, data_only=data_only)
    if sheet is None:
        return wb.worksheets[0]
    if sheet not in wb.sheetnames:
        raise KeyError(f"no sheet '{sheet}' (sheets: {', '.join(wb.sheetnames)})")
    return wb[sheet]


def cell(path: Path, sheet: str | None, ref: str) -> str | None:
    import openpyxl

    wb = openpyxl.load_workbook(path, data_only=True)
    ws = wb[sheet] if sheet else wb.worksheets[0]
    value = ws[ref].value
    return None if value is None else _text(value)


def _text(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def plain_text(path: Path, limit: int = 200_000) -> str:
    """The file's text content: what a reader of the file would see."""
    if path.stat().st_size > MAX_BYTES:
        raise UnreadableFile(f"{path}: larger than {MAX_BYTES >> 20} MiB")
    kind = fmt(path)
    try:
        if kind in ("csv", "tsv", "md", "txt"):
            text = path.read_text(encoding="utf-8-sig", errors="replace")
        elif kind == "json":
            text = json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=1)
        elif kind == "xlsx":
            import openpyxl

            wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
            parts = []
            for ws in wb.worksheets:
                parts.append(f"[sheet {ws.title}]")
                for row in ws.iter_rows(values_only=True):
                    parts.append(",".join("" if v is None else _text(v) for v in row))
            text = "\n".join(parts)
        elif kind == "docx":
            import docx

            text = "\n".join(p.text for p in docx.Document(str(path)).paragraphs)
        elif kind == "pdf":
            from pypdf import PdfReader

            text = "\n".join((page.extract_text() or "") for page in PdfReader(str(path)).pages)
        else:
            raise UnreadableFile(f"{path}: unsupported format '{kind}'")
    except UnreadableFile:
        raise
    except Exception as e:  # every library's own parse error: one clear line naming the file
        raise UnreadableFile(f"{path}: cannot read as {kind}: {type(e).__name__}: {e}") from None
    return text[:limit]


def preview(path: Path, rows: int = 25, chars: int = 4000) -> str:
    """What a model sees of a file: tables with 1-based data row numbers, other text cut."""
    kind = fmt(path)
    if kind in ("csv", "tsv", "xlsx"):
        out = []
        sheets = [None]
        if kind == "xlsx":
            import openpyxl

            sheets = openpyxl.load_workbook(path, read_only=True).sheetnames
        for sheet in sheets:
            data = table(path, sheet)
            head = f"[sheet {sheet}] " if sheet else ""
            out.append(f"{head}columns: {', '.join(data[0].keys()) if data else '(empty)'}; {len(data)} data rows")
            for i, row in enumerate(data[:rows], 1):
                out.append(f"row {i}: " + "; ".join(f"{k}={v}" for k, v in row.items()))
        return "\n".join(out)[:chars]
    return plain_text(path)[:chars]
