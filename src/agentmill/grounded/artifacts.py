"""Deterministic artifact checks over deliverables, and their text for the judge. Standard library
only: this file is also copied into each grounded task's tests/ and run by the verifier inside the
sandbox (`python3 -I check_artifacts.py checks.json /app/output /logs/verifier/reward.json`).

Deliverables are hostile input: links are refused (never followed), sizes are capped before
reading, zip members are capped by their declared and actual size, and XML with a DOCTYPE
(entity expansion) is refused.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import sys
import zipfile
from xml.etree import ElementTree as ET

MAX_FILE = 20 << 20
MAX_MEMBER = 50 << 20
NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
      "w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main"}


class BadArtifact(Exception):
    pass


def read_regular(path: str) -> bytes:
    """The bytes of a regular file, never through a link, at most MAX_FILE."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise BadArtifact(f"{os.path.basename(path)}: missing or not a plain file ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadArtifact(f"{os.path.basename(path)}: not a regular file")
        if st.st_size > MAX_FILE:
            raise BadArtifact(f"{os.path.basename(path)}: larger than {MAX_FILE >> 20} MiB")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_FILE + 1)
    finally:
        os.close(fd)


def _member(z: zipfile.ZipFile, name: str) -> bytes:
    info = z.getinfo(name)
    if info.file_size > MAX_MEMBER:
        raise BadArtifact(f"zip member {name} too large")
    with z.open(info) as fh:
        data = fh.read(MAX_MEMBER + 1)
    if len(data) > MAX_MEMBER:
        raise BadArtifact(f"zip member {name} too large")
    return data


def _xml(data: bytes):
    if b"<!DOCTYPE" in data[:4096].upper() or b"<!ENTITY" in data.upper():
        raise BadArtifact("XML with a DOCTYPE or entity declarations refused")
    return ET.fromstring(data)


def _col_row(ref: str) -> tuple[str, int]:
    m = re.match(r"([A-Z]+)(\d+)$", ref or "")
    return (m.group(1), int(m.group(2))) if m else ("", 0)


def xlsx_cells(data: bytes) -> dict[str, list[tuple[str, str, str | None]]]:
    """sheet name -> [(cell ref, value text, formula or None)] in document order."""
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
        wb = _xml(_member(z, "xl/workbook.xml"))
        rels = _xml(_member(z, "xl/_rels/workbook.xml.rels"))
    except (zipfile.BadZipFile, KeyError, ET.ParseError) as e:
        raise BadArtifact(f"not an xlsx workbook ({type(e).__name__})") from None
    targets = {r.get("Id"): r.get("Target") for r in rels}
    shared: list[str] = []
    if "xl/sharedStrings.xml" in z.namelist():
        for si in _xml(_member(z, "xl/sharedStrings.xml")).findall("m:si", NS):
            shared.append("".join(t.text or "" for t in si.iter(f"{{{NS['m']}}}t")))
    out = {}
    rid = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
    for sheet in wb.find("m:sheets", NS) or []:
        target = (targets.get(sheet.get(rid)) or "").lstrip("/")
        path = target if target.startswith("xl/") else f"xl/{target}"
        try:
            root = _xml(_member(z, path))
        except (KeyError, ET.ParseError):
            raise BadArtifact(f"sheet {sheet.get('name')} unreadable") from None
        cells = []
        for c in root.iter(f"{{{NS['m']}}}c"):
            f = c.find("m:f", NS)
            v = c.find("m:v", NS)
            t = c.get("t")
            if t == "s" and v is not None and (v.text or "").isdigit() and int(v.text) < len(shared):
                value = shared[int(v.text)]
            elif t == "inlineStr":
                value = "".join(x.text or "" for x in c.iter(f"{{{NS['m']}}}t"))
            else:
                value = v.text if v is not None and v.text is not None else ""
            cells.append((c.get("r") or "", value, (f.text or "") if f is not None else None))
        out[sheet.get("name") or ""] = cells
    return out


def docx_paragraphs(data: bytes) -> list[tuple[str, str]]:
    """[(style, text)] of the document body."""
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
        root = _xml(_member(z, "word/document.xml"))
    except (zipfile.BadZipFile, KeyError, ET.ParseError) as e:
        raise BadArtifact(f"not a docx document ({type(e).__name__})") from None
    out = []
    for p in root.iter(f"{{{NS['w']}}}p"):
        style = p.find("w:pPr/w:pStyle", NS)
        text = "".join(t.text or "" for t in p.iter(f"{{{NS['w']}}}t"))
        out.append((style.get(f"{{{NS['w']}}}val") if style is not None else "", text))
    return out


def headings(fmt: str, data: bytes) -> list[str]:
    if fmt == "docx":
        paras = docx_paragraphs(data)
        return [t for s, t in paras if s.lower().startswith(("heading", "title"))] or [t for _, t in paras]
    text = data.decode("utf-8", errors="replace")
    if fmt == "md":
        return [ln.lstrip("#").strip() for ln in text.splitlines() if ln.startswith("#")]
    return [ln.strip() for ln in text.splitlines()]


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().casefold()


def check_deliverable(d: dict, out_dir: str) -> list[tuple[str, bool, str]]:
    """[(check name, passed, detail)] for one deliverable spec (see records.Deliverable)."""
    name = d["path"]
    results: list[tuple[str, bool, str]] = []
    if name.startswith("/") or ".." in name.split("/"):
        return [(f"{name}: path", False, "unsafe path")]
    try:
        data = read_regular(os.path.join(out_dir, name))
    except BadArtifact as e:
        return [(f"{name}: exists", False, str(e))]
    results.append((f"{name}: exists", True, f"{len(data)} bytes"))
    fmt = d["format"]
    try:
        if fmt == "csv":
            rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
            if not rows:
                raise BadArtifact("empty CSV")
            header = [_norm(h) for h in rows[0]]
            missing = [c for c in d.get("columns", []) if _norm(c) not in header]
            results.append((f"{name}: columns", not missing, f"missing {missing}" if missing else "ok"))
        elif fmt == "xlsx":
            sheets = xlsx_cells(data)
            missing = [s for s in d.get("sheets", []) if s not in sheets]
            if d.get("sheets"):
                results.append((f"{name}: sheets", not missing, f"missing {missing}" if missing else "ok"))
            if d.get("formulas"):
                has = any(f is not None for cells in sheets.values() for _, _, f in cells)
                results.append((f"{name}: formulas", has, "ok" if has else "no formula cell"))
            if d.get("columns"):
                first = next(iter(sheets.values()), [])
                header = [_norm(v) for ref, v, _ in first if _col_row(ref)[1] == 1]
                miss = [c for c in d["columns"] if _norm(c) not in header]
                results.append((f"{name}: columns", not miss, f"missing {miss}" if miss else "ok"))
        elif fmt == "json":
            json.loads(data.decode("utf-8"))
        elif fmt in ("md", "txt", "docx"):
            if fmt != "docx":
                data.decode("utf-8")
            have = {_norm(h) for h in headings(fmt, data)}
            missing = [s for s in d.get("sections", []) if _norm(s) not in have]
            if d.get("sections"):
                results.append((f"{name}: sections", not missing, f"missing {missing}" if missing else "ok"))
        results.append((f"{name}: format {fmt}", True, "ok"))
    except (BadArtifact, UnicodeDecodeError, ValueError, csv.Error) as e:
        results.append((f"{name}: format {fmt}", False, str(e)[:200]))
    return results


def render(fmt: str, data: bytes, limit: int = 20_000) -> str:
    """The deliverable as text for the judge: tables as rows, xlsx cells with refs and formulas."""
    try:
        if fmt == "xlsx":
            lines = []
            for sheet, cells in xlsx_cells(data).items():
                lines.append(f"[sheet {sheet}]")
                lines += [f"{ref}={value}" + (f" (formula ={f})" if f else "") for ref, value, f in cells]
            text = "\n".join(lines)
        elif fmt == "docx":
            text = "\n".join(("# " if s.lower().startswith("heading") else "") + t for s, t in docx_paragraphs(data))
        else:
            text = data.decode("utf-8", errors="replace")
    except BadArtifact as e:
        text = f"(unreadable: {e})"
    return text[:limit]


def render_deliverables(deliverables: list[dict], out_dir: str) -> dict[str, str]:
    """Each deliverable's text for the judge (path -> text), or why it is not available."""
    texts = {}
    for d in deliverables:
        try:
            texts[d["path"]] = render(d["format"], read_regular(os.path.join(out_dir, d["path"])))
        except BadArtifact as e:
            texts[d["path"]] = f"(not available: {e})"
    return texts


def run_checks(deliverables: list[dict], out_dir: str) -> dict:
    results = [r for d in deliverables for r in check_deliverable(d, out_dir)]
    passed = sum(1 for _, ok, _ in results if ok)
    return {"checks": [{"name": n, "passed": ok, "detail": det} for n, ok, det in results],
            "all_passed": bool(results) and passed == len(results), "fraction": passed / len(results) if results else 0.0}


def main(argv: list[str]) -> int:
    """checks.json out_dir reward.json [judge_input.json]: the last, when given, receives the
    deliverables as text for the host's rubric judge (verify/judged.py)."""
    checks_path, out_dir, reward_path = argv[1:4]
    with open(checks_path, encoding="utf-8") as fh:
        deliverables = json.load(fh)
    report = run_checks(deliverables, out_dir)
    for c in report["checks"]:
        print(("PASS " if c["passed"] else "FAIL ") + c["name"] + ": " + c["detail"])
    with open(reward_path, "w", encoding="utf-8") as fh:
        json.dump({"reward": 1.0 if report["all_passed"] else 0.0, "checks_fraction": report["fraction"]}, fh)
    if len(argv) > 4:
        with open(argv[4], "w", encoding="utf-8") as fh:
            json.dump(render_deliverables(deliverables, out_dir), fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
