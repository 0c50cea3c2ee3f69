"""Fact checks compiled from the spec and the evidence graph, and their evaluation by the
in-sandbox checker (standard library only): right numbers pass, wrong numbers fail, a spreadsheet
formula counts as what it computes, and a deliverable sprayed with numbers is no answer."""

import io
import json

import openpyxl
import pytest

from agentmill.grounded import artifacts
from agentmill.grounded.factchecks import basis, compile_checks, parse_number
from agentmill.grounded.records import Graph, Spec
from agentmill.grounded.task_folder import checks_json
from tests.grounded import scripted


def graph() -> Graph:
    nodes = [dict(n, role="core") for n in scripted.GRAPH["nodes"] if n["id"] != "fplanted"]
    return Graph(nodes=nodes, edges=[])


def facts_for(path="summary.csv"):
    return compile_checks(Spec.model_validate(scripted.SPEC), graph(), [scripted.CSV, scripted.ABOUT])[path]


def test_parse_number_takes_one_number_with_a_unit_and_nothing_else():
    assert parse_number("56476") == (56476.0, 0, False)
    assert parse_number("38.8%") == (38.8, 1, True)
    assert parse_number("$1,234.50 USD") == (1234.5, 2, False)
    assert parse_number("21933 / 56476, to one decimal place") is None
    assert parse_number("thousand megawatthours") is None


def test_compiled_checks_say_how_each_value_follows_from_its_anchors():
    by_id = {f["id"]: f for p in ("summary.csv", "memo.md") for f in facts_for(p)}
    assert by_id["c1:number"]["value"] == 56476 and by_id["c1:number"]["basis"] == "sum of anchors"
    assert by_id["c2:number"]["percent"] and by_id["c2:number"]["tol"] == pytest.approx(0.05)
    assert by_id["c2:number"]["basis"] == "share of the anchors' total"
    assert by_id["c3:text"]["value"] == "thousand megawatthours"  # a cited span: a named unit
    assert basis(123.0, 0.5, [1.0, 2.0]) == "stated"
    assert basis(3.0, 0.5, [1.0, 2.0]) == "sum of anchors"


def test_checks_json_keeps_format_checks_and_adds_facts():
    spec = Spec.model_validate(scripted.SPEC)
    cj = checks_json(spec, graph(), [scripted.CSV])
    assert [d["path"] for d in cj] == ["summary.csv", "memo.md"] and cj[0]["columns"] == ["source", "net_generation"]
    assert [f["id"] for f in cj[0]["facts"]] == ["c1:number"]


def run(tmp_path, deliverables: dict[str, str | bytes], spec_deliverables=None):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    for name, data in deliverables.items():
        (out / name).write_bytes(data.encode() if isinstance(data, str) else data)
    ds = spec_deliverables or checks_json(Spec.model_validate(scripted.SPEC), graph(), [scripted.CSV])
    return artifacts.run_checks(ds, str(out))


GOOD_CSV = "source,net_generation\nFossil Fuels,29329\nNuclear Energy,5214\nRenewables,21933\nTotal,56476\n"
GOOD_MD = (
    "# Summary\nIn 2017 Iowa generated 56,476 thousand megawatthours; 38.8% came from renewables.\n# Method\nSummed.\n"
)


def failed(report) -> list[str]:
    return [c["name"] for c in report["checks"] if not c["passed"]]


def test_right_numbers_pass_and_wrong_numbers_fail_with_the_format_intact(tmp_path):
    assert run(tmp_path, {"summary.csv": GOOD_CSV, "memo.md": GOOD_MD})["all_passed"]
    wrong = run(
        tmp_path, {"summary.csv": GOOD_CSV.replace("56476", "40651"), "memo.md": GOOD_MD.replace("38.8%", "3.5%")}
    )
    assert failed(wrong) == ["summary.csv: c1:number", "memo.md: c2:number"]
    # a share written as a fraction, and rounded to the deliverable's own precision, is the same answer
    assert run(tmp_path, {"summary.csv": GOOD_CSV, "memo.md": GOOD_MD.replace("38.8%", "0.388 of it")})["all_passed"]
    assert run(tmp_path, {"summary.csv": GOOD_CSV, "memo.md": GOOD_MD.replace("38.8%", "39%")})["all_passed"]
    # a unit the documentation never gives fails the compiled text check
    assert failed(
        run(tmp_path, {"summary.csv": GOOD_CSV, "memo.md": GOOD_MD.replace("thousand megawatthours", "GWh")})
    ) == ["memo.md: c3:text"]


def test_csv_cells_are_read_one_by_one(tmp_path):
    # "56,476" split over two cells is not 56476; quoted in one cell it is
    split = GOOD_CSV.replace("Total,56476", "Total,56,476")
    assert "summary.csv: c1:number" in failed(run(tmp_path, {"summary.csv": split, "memo.md": GOOD_MD}))
    quoted = GOOD_CSV.replace("Total,56476", 'Total,"56,476"')
    assert run(tmp_path, {"summary.csv": quoted, "memo.md": GOOD_MD})["all_passed"]


def test_a_sprayed_deliverable_is_no_answer_and_its_honest_twin_is(tmp_path):
    """Attack: a memo listing every number near any plausible answer. Planted without the
    near-miss guard (NEAR_MISSES = 10**9), this passes."""
    spray = GOOD_MD.replace("38.8%", " ".join(f"{x / 10:.1f}%" for x in range(300, 500)))
    report = run(tmp_path, {"summary.csv": GOOD_CSV, "memo.md": spray})
    assert failed(report) == ["memo.md: c2:number"]
    assert "no single answer" in next(c["detail"] for c in report["checks"] if c["name"] == "memo.md: c2:number")
    table = "source,net_generation\n" + "".join(f"r{i},{i}\n" for i in range(50000, 60000))
    assert "summary.csv: c1:number" in failed(run(tmp_path, {"summary.csv": table, "memo.md": GOOD_MD}))
    # honest twin: a few nearby shares (other years) do not make the answer ambiguous
    honest = GOOD_MD + "Earlier: 37.9% in 2016, 36.2% in 2015, 33.0% in 2014.\n"
    assert run(tmp_path, {"summary.csv": GOOD_CSV, "memo.md": honest})["all_passed"]


def xlsx(rows, extra=None) -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Summary"
    for r in rows:
        sheet.append(r)
    for ref, v in (extra or {}).items():
        sheet[ref] = v
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


XLSX_SPEC = [
    {
        "path": "summary.xlsx",
        "format": "xlsx",
        "formulas": True,
        "facts": [
            {"id": "c1:number", "kind": "number", "value": 56476.0, "tol": 0.5, "percent": False, "expected": "56476"},
            {"id": "c2:number", "kind": "number", "value": 38.8, "tol": 0.05, "percent": True, "expected": "38.8%"},
        ],
    }
]
PARTS = [["source", "net_generation"], ["Fossil Fuels", 29329], ["Nuclear Energy", 5214], ["Renewables", 21933]]


def test_formulas_count_as_what_they_compute(tmp_path):
    good = xlsx(PARTS + [["Total", "=SUM(B2:B4)"], ["Share", "=ROUND(B4/B5*100, 1)"]])
    assert run(tmp_path, {"summary.xlsx": good}, XLSX_SPEC)["all_passed"]
    arithmetic = xlsx(PARTS + [["Total", "=B2+B3+B4"], ["Share", "=Summary!B4/$B$5"]])
    assert run(tmp_path, {"summary.xlsx": arithmetic}, XLSX_SPEC)["all_passed"]
    wrong = xlsx(PARTS + [["Total", "=SUM(B2:B3)"], ["Share", "=B4/B5*100"]])
    assert failed(run(tmp_path, {"summary.xlsx": wrong}, XLSX_SPEC)) == [
        "summary.xlsx: c1:number",
        "summary.xlsx: c2:number",
    ]


def test_a_cached_value_that_lies_about_its_formula_counts_as_the_formula(tmp_path):
    """Attack: the right total typed as the cached value of a formula that computes something else
    (a spreadsheet shows the formula's result after recalculation). Planted (cached values
    preferred), this passes."""
    book = xlsx(PARTS + [["Total", "=SUM(B2:B3)"], ["Share", 38.8]])
    forged = artifacts_with_cached(book, "B5", "56476")
    report = run(tmp_path, {"summary.xlsx": forged}, XLSX_SPEC)
    assert failed(report) == ["summary.xlsx: c1:number"]
    # honest twin: a formula outside the evaluated subset keeps the value the file caches
    kept = artifacts_with_cached(xlsx(PARTS + [["Total", "=SUMPRODUCT(B2:B4)"], ["Share", 38.8]]), "B5", "56476")
    assert run(tmp_path, {"summary.xlsx": kept}, XLSX_SPEC)["all_passed"]


def artifacts_with_cached(data: bytes, ref: str, value: str) -> bytes:
    """The workbook with a cached <v> written beside the formula of `ref` (what Excel stores)."""
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                text = body.decode()
                start = text.index(f'<c r="{ref}"')
                end = text.index("</c>", start)
                body = (text[:start] + text[start:end].replace("<v></v>", "") + f"<v>{value}</v>" + text[end:]).encode()
            dst.writestr(item, body)
    return buf.getvalue()


def test_circular_and_oversized_formulas_never_hang(tmp_path):
    book = xlsx(PARTS + [["Total", "=C1"]], {"C1": "=B5", "D1": "=SUM(A1:XFD1048576)"})
    report = run(tmp_path, {"summary.xlsx": book}, XLSX_SPEC)
    assert "summary.xlsx: c1:number" in failed(report)


def test_the_checker_still_runs_checks_json_without_facts(tmp_path):
    report = run(tmp_path, {"summary.csv": GOOD_CSV}, [{"path": "summary.csv", "format": "csv", "columns": ["source"]}])
    assert report["all_passed"] and json.dumps(report)


def pdf_bytes(lines: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    for line in lines:
        pdf.multi_cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


PDF_SPEC = [
    {
        "path": "memo.pdf",
        "format": "pdf",
        "sections": ["Summary", "Method"],
        "facts": [
            {"id": "c2:number", "kind": "number", "value": 38.8, "tol": 0.05, "percent": True, "expected": "38.8%"}
        ],
    }
]


def test_pdf_deliverables_are_read_for_sections_and_facts(tmp_path):
    good = pdf_bytes(["Summary", "Renewables gave 38.8% of 2017's generation.", "Method", "Summed the rows."])
    assert run(tmp_path, {"memo.pdf": good}, PDF_SPEC)["all_passed"]
    wrong = pdf_bytes(["Summary", "Renewables gave 3.5% of 2017's generation.", "Method", "Summed."])
    assert failed(run(tmp_path, {"memo.pdf": wrong}, PDF_SPEC)) == ["memo.pdf: c2:number"]
    fake = run(tmp_path, {"memo.pdf": "# Summary\n38.8%\n# Method\n"}, [{"path": "memo.pdf", "format": "pdf"}])
    assert failed(fake) == ["memo.pdf: format pdf"] and "not a PDF" in fake["checks"][-1]["detail"]
    assert "38.8%" in artifacts.render("pdf", good)


def test_the_checker_reads_pdfs_with_the_system_python_as_in_the_sandbox(tmp_path):
    """`python3 -I check_artifacts.py` as the verifier runs it: the office image's (here the
    host's) python3 with Debian's python3-pypdf."""
    import subprocess
    from pathlib import Path

    out = tmp_path / "out"
    out.mkdir()
    (out / "memo.pdf").write_bytes(pdf_bytes(["Summary", "Renewables gave 38.8%.", "Method", "Summed."]))
    (tmp_path / "checks.json").write_text(json.dumps(PDF_SPEC))
    p = subprocess.run(
        [
            "/usr/bin/python3",
            "-I",
            artifacts.__file__,
            str(tmp_path / "checks.json"),
            str(out),
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(Path(tmp_path / "r.json").read_text())["reward"] == 1.0, p.stdout
