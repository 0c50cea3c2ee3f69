"""Deterministic artifact checks over deliverables, and their text for the judge. Standard library
only: this file is also copied into each grounded task's tests/ and run by the verifier inside the
sandbox (`python3 -I check_artifacts.py checks.json /app/output /logs/verifier/reward.json`).
PDF deliverables are the exception: their text comes from pypdf where the interpreter has it (the
office image's python3-pypdf; agentmill's own environment), else a PDF cannot be checked there.

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


MAX_PDF_PAGES = 50


def pdf_text(data: bytes) -> str:
    """The text of a PDF's first pages (pypdf, pure Python: a parser, never a program of the PDF's)."""
    if not data.startswith(b"%PDF-"):
        raise BadArtifact("not a PDF (no %PDF- header)")
    try:
        import pypdf
    except ImportError:
        raise BadArtifact("no PDF reader (pypdf) in this environment") from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise BadArtifact("encrypted PDF")
        return "\n".join((page.extract_text() or "") for page in reader.pages[:MAX_PDF_PAGES])
    except BadArtifact:
        raise
    except Exception as e:  # noqa: BLE001 - any parser failure on hostile input is the deliverable's
        raise BadArtifact(f"unreadable PDF ({type(e).__name__})") from None


def headings(fmt: str, data: bytes) -> list[str]:
    if fmt == "pdf":
        return [ln.strip() for ln in pdf_text(data).splitlines() if ln.strip()]
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
        elif fmt in ("md", "txt", "docx", "pdf"):
            if fmt in ("md", "txt"):
                data.decode("utf-8")
            elif fmt == "pdf":
                pdf_text(data)  # readable at all, sections or not
            have = {_norm(h) for h in headings(fmt, data)}
            missing = [s for s in d.get("sections", []) if _norm(s) not in have]
            if d.get("sections"):
                results.append((f"{name}: sections", not missing, f"missing {missing}" if missing else "ok"))
        results.append((f"{name}: format {fmt}", True, "ok"))
    except (BadArtifact, UnicodeDecodeError, ValueError, csv.Error) as e:
        results.append((f"{name}: format {fmt}", False, str(e)[:200]))
        return results + [(f"{name}: {f['id']}", False, "unreadable deliverable") for f in d.get("facts", [])]
    if d.get("facts"):
        try:
            text, numbers = contents(fmt, data)
        except (BadArtifact, UnicodeDecodeError, ValueError, csv.Error, RecursionError) as e:
            return results + [(f"{name}: {f['id']}", False, f"unreadable: {str(e)[:100]}") for f in d["facts"]]
        for f in d["facts"]:
            ok, detail = check_fact(f, text, numbers)
            results.append((f"{name}: {f['id']}", ok, detail))
    return results


# -- fact checks (compiled by grounded/factchecks.py) ----------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_FTOKEN = re.compile(r"\s*(?:(?P<ref>(?:(?:'[^']+'|[A-Za-z_][\w.]*)!)?\$?[A-Z]{1,3}\$?\d+(?::\$?[A-Z]{1,3}\$?\d+)?)(?![\w(])"
                     r"|(?P<fn>[A-Za-z][A-Za-z0-9.]*)\(|(?P<num>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(?P<op>[-+*/^(),%]))")
MAX_RANGE = 200_000
NEAR_MISSES = 5  # more distinct numbers this close to an expected value, none of them it: a spray


class Unsupported(Exception):
    pass


def _col_index(col: str) -> int:
    n = 0
    for ch in col:
        n = n * 26 + ord(ch) - 64
    return n


def _col_name(n: int) -> str:
    s = ""
    while n:
        n, r = divmod(n - 1, 26)
        s = chr(65 + r) + s
    return s


class Workbook:
    """Cell values of an xlsx, with formulas evaluated (a small subset of the spreadsheet language:
    + - * / ^ %, parentheses, references and ranges on any sheet, SUM AVERAGE MIN MAX COUNT ROUND
    ABS) the way a spreadsheet shows them after recalculation; a formula outside the subset keeps
    its cached value. Files written by openpyxl have formulas without cached values."""

    def __init__(self, sheets: dict[str, list[tuple[str, str, str | None]]]):
        self.cells = {name: {ref: (v, f) for ref, v, f in cells} for name, cells in sheets.items()}
        self.cache: dict[tuple[str, str], object] = {}
        self.depth = 0

    def value(self, sheet: str, ref: str):
        key = (sheet, ref)
        if key in self.cache:
            if self.cache[key] is _VISITING:
                raise Unsupported("circular reference")
            return self.cache[key]
        raw, formula = self.cells.get(sheet, {}).get(ref, ("", None))
        self.cache[key] = _VISITING
        result = _literal(raw)
        if formula is not None:
            self.depth += 1
            try:
                if self.depth > 200:
                    raise Unsupported("references nested too deep")
                result = _Formula(self, sheet, formula).parse()
            except (Unsupported, ZeroDivisionError, OverflowError, ValueError, IndexError, TypeError):
                result = _literal(raw) if raw != "" else None
            finally:
                self.depth -= 1
        self.cache[key] = result
        return result

    def values(self):
        for sheet, cells in self.cells.items():
            for ref in cells:
                yield sheet, ref, self.value(sheet, ref)


_VISITING = object()


def _literal(raw: str):
    try:
        return float(raw)
    except ValueError:
        return raw


class _Formula:
    def __init__(self, book: Workbook, sheet: str, text: str):
        self.book, self.sheet = book, sheet
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.lstrip("=")
        while pos < len(text.rstrip()):
            m = _FTOKEN.match(text, pos)
            kind = m.lastgroup if m else None  # every alternative is a named group: a match names one
            if not m or m.end() == pos or kind is None:
                raise Unsupported(f"cannot read formula at {text[pos:pos + 10]!r}")
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self, op: str | None = None):
        tok = self.peek()
        if op is not None and tok != ("op", op):
            raise Unsupported(f"expected {op}")
        self.i += 1
        return tok

    def parse(self) -> float:
        v = self.expr()
        if self.peek()[0] != "end":
            raise Unsupported("trailing input")
        return self.num(v)

    @staticmethod
    def num(v) -> float:
        if isinstance(v, list):
            raise Unsupported("a range outside a function")
        if v is None or v == "":
            return 0.0
        if isinstance(v, str):
            raise Unsupported("text in arithmetic")
        return float(v)

    def expr(self):
        v = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            w = self.term()
            v = self.num(v) + self.num(w) if op == "+" else self.num(v) - self.num(w)
        return v

    def term(self):
        v = self.unary()
        while self.peek() in (("op", "*"), ("op", "/")):
            op = self.take()[1]
            w = self.unary()
            v = self.num(v) * self.num(w) if op == "*" else self.num(v) / self.num(w)
        return v

    def unary(self):
        if self.peek() in (("op", "-"), ("op", "+")):
            sign = -1.0 if self.take()[1] == "-" else 1.0
            return sign * self.num(self.unary())
        v = self.atom()
        if self.peek() == ("op", "^"):
            self.take()
            v = self.num(v) ** self.num(self.unary())
        while self.peek() == ("op", "%"):
            self.take()
            v = self.num(v) / 100
        return v

    def atom(self):
        kind, text = self.take()
        if kind == "num":
            return float(text)
        if kind == "ref":
            return self.ref(text)
        if kind == "op" and text == "(":
            v = self.expr()
            self.take(")")
            return v
        if kind == "fn":
            args = []
            if self.peek() != ("op", ")"):
                args.append(self.expr())
                while self.peek() == ("op", ","):
                    self.take()
                    args.append(self.expr())
            self.take(")")
            return self.call(text.upper(), args)
        raise Unsupported(f"unexpected {text!r}")

    def ref(self, text: str):
        sheet = self.sheet
        if "!" in text:
            sheet, text = text.rsplit("!", 1)
            sheet = sheet.strip("'")
        text = text.replace("$", "")
        if ":" not in text:
            return self.book.value(sheet, text)
        (c1, r1), (c2, r2) = (_col_row(p) for p in text.split(":"))
        cols = range(min(_col_index(c1), _col_index(c2)), max(_col_index(c1), _col_index(c2)) + 1)
        rows = range(min(r1, r2), max(r1, r2) + 1)
        if len(cols) * len(rows) > MAX_RANGE:
            raise Unsupported("range too large")
        present = self.book.cells.get(sheet, {})
        return [self.book.value(sheet, ref) for r in rows for c in cols if (ref := f"{_col_name(c)}{r}") in present]

    def call(self, name: str, args: list):
        flat = []
        for a in args:
            flat += [x for x in a if isinstance(x, float)] if isinstance(a, list) else [self.num(a)]
        if name == "SUM":
            return sum(flat)
        if name == "AVERAGE":
            return sum(flat) / len(flat)
        if name == "MIN":
            return min(flat) if flat else 0.0
        if name == "MAX":
            return max(flat) if flat else 0.0
        if name == "COUNT":
            return float(len(flat))
        if name == "ABS" and len(flat) == 1:
            return abs(flat[0])
        if name == "ROUND" and len(flat) == 2:
            return round(flat[0], int(flat[1]))
        raise Unsupported(f"function {name}")


def _numbers_in_text(text: str) -> list[tuple[float, int]]:
    out = []
    for m in _NUMBER.finditer(text):
        digits = m.group(0).replace(",", "")
        try:
            value = float(digits)
        except ValueError:
            continue
        mant = digits.split("e")[0].split("E")[0]
        out.append((value, len(mant.split(".")[1]) if "." in mant else 0))
    return out


def contents(fmt: str, data: bytes) -> tuple[str, list[tuple[float, int]]]:
    """A deliverable's text and its numbers as (value, decimals shown). Tables are read cell by
    cell (a CSV row's commas never join two numbers); xlsx formulas are evaluated."""
    if fmt == "xlsx":
        book = Workbook(xlsx_cells(data))
        texts, numbers = [], []
        for _, _, v in book.values():
            if isinstance(v, float):
                numbers.append((v, 15))
                texts.append(repr(v))
            elif v:
                texts.append(v)
                numbers += _numbers_in_text(v)
        return "\n".join(texts), numbers
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
        cells = [c for r in rows for c in r]
        return "\n".join(cells), [n for c in cells for n in _numbers_in_text(c)]
    if fmt == "json":
        texts, numbers = [], []

        def walk(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    texts.append(str(k))
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
            elif isinstance(o, bool) or o is None:
                pass
            elif isinstance(o, (int, float)):
                numbers.append((float(o), 15 if isinstance(o, float) else 0))
            else:
                texts.append(str(o))
                numbers.extend(_numbers_in_text(str(o)))

        walk(json.loads(data.decode("utf-8")))
        return "\n".join(texts), numbers
    if fmt == "docx":
        text = "\n".join(t for _, t in docx_paragraphs(data))
    elif fmt == "pdf":
        text = pdf_text(data)
    else:
        text = data.decode("utf-8")
    return text, _numbers_in_text(text)


def check_fact(fact: dict, text: str, numbers: list[tuple[float, int]]) -> tuple[bool, str]:
    kind = fact["kind"]
    if kind == "number":
        v, tol = float(fact["value"]), float(fact["tol"])
        candidates = list(numbers)
        if fact.get("percent"):  # 38.8% may be written 0.388
            candidates += [(x * 100, max(d - 2, 0)) for x, d in numbers if abs(x) <= 1]
        hits = [x for x, d in candidates if abs(x - v) <= max(tol, 0.5 * 10 ** -d) + 1e-9 * max(1.0, abs(v))]
        if not hits:
            return False, f"{fact['expected']} not found"
        spread = max(10 * tol, 0.01 * abs(v))
        near = {round(x, 9) for x, _ in candidates if abs(x - v) <= spread and x not in hits}
        if len(near) > NEAR_MISSES:
            return False, f"{fact['expected']} is among {len(near)} other numbers near it: no single answer"
        return True, f"{fact['expected']} found"
    want = _norm(fact["value"])
    if want and want in _norm(text):
        return True, f"{fact['value']!r} found"
    return False, f"{fact['value']!r} not found" if kind == "text" else f"does not cite {fact['value']}"


def render(fmt: str, data: bytes, limit: int = 20_000) -> str:
    """The deliverable as text for the judge: tables as rows, xlsx cells with refs and formulas."""
    try:
        if fmt == "xlsx":
            text = _render_xlsx(xlsx_cells(data))
        elif fmt == "docx":
            text = "\n".join(("# " if s.lower().startswith("heading") else "") + t for s, t in docx_paragraphs(data))
        elif fmt == "pdf":
            text = pdf_text(data)
        else:
            text = data.decode("utf-8", errors="replace")
    except BadArtifact as e:
        text = f"(unreadable: {e})"
    return text[:limit]


def _render_xlsx(sheets: dict[str, list[tuple[str, str, str | None]]]) -> str:
    """A formula cell shows the value the fact checks use (evaluated, as a spreadsheet shows it after
    recalculation: openpyxl writes no cached value), then its formula, then a cached value that
    disagrees with it: the judge and the deterministic checks see the same number."""
    book, lines = Workbook(sheets), []
    for sheet, cells in sheets.items():
        lines.append(f"[sheet {sheet}]")
        for ref, value, formula in cells:
            if formula is None:
                lines.append(f"{ref}={value}")
                continue
            shown = book.value(sheet, ref)
            stale = value != "" and _literal(value) != shown
            lines.append(f"{ref}={_cell_text(shown)} (formula ={formula}" + (f"; cached value in the file: {value}" if stale else "") + ")")
    return "\n".join(lines)


def _cell_text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    return str(v)


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
