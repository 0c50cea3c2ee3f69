"""Deterministic artifact checks over real office files, and deliverables as hostile input."""

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import docx
import openpyxl

from agentmill.grounded import artifacts

CHECKER = Path(artifacts.__file__)


def xlsx(path, sheets=("Summary",), formula=True):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = sheets[0]
    ws.append(["source", "net_generation"])
    ws.append(["Renewables", 21933])
    ws.append(["Nuclear", 5214])
    if formula:
        ws["B4"] = "=SUM(B2:B3)"
    for extra in sheets[1:]:
        wb.create_sheet(extra)
    wb.save(path)


def names(report):
    return {c["name"]: c["passed"] for c in report["checks"]}


def test_xlsx_sheets_formulas_and_columns(tmp_path):
    xlsx(tmp_path / "book.xlsx", sheets=("Summary", "Data"))
    d = {
        "path": "book.xlsx",
        "format": "xlsx",
        "sheets": ["Summary", "Data"],
        "formulas": True,
        "columns": ["Source", "net_generation"],
    }
    assert artifacts.run_checks([d], str(tmp_path))["all_passed"]
    xlsx(tmp_path / "flat.xlsx", formula=False)
    bad = artifacts.run_checks([dict(d, path="flat.xlsx")], str(tmp_path))
    assert names(bad) == {
        "flat.xlsx: exists": True,
        "flat.xlsx: sheets": False,
        "flat.xlsx: formulas": False,
        "flat.xlsx: columns": True,
        "flat.xlsx: format xlsx": True,
    }
    text = artifacts.render("xlsx", (tmp_path / "book.xlsx").read_bytes())
    # the judge sees the formula's value as the fact checks compute it (openpyxl writes no cached value)
    assert "[sheet Summary]" in text and "B4=27147 (formula =SUM(B2:B3))" in text and "A2=Renewables" in text


def test_the_judge_sees_a_formulas_value_not_a_cached_value_that_lies(tmp_path):
    """Attack: a cached value the formula does not give (what a spreadsheet would replace on
    recalculation) shown to the judge as the cell's value. The judge sees the evaluated value and the
    disagreement. Planted (_render_xlsx showing the cached value), caught."""
    import zipfile

    xlsx(tmp_path / "book.xlsx")
    with zipfile.ZipFile(tmp_path / "book.xlsx") as z:
        members = {n: z.read(n) for n in z.namelist()}
    sheet = "xl/worksheets/sheet1.xml"
    assert b"<f>SUM(B2:B3)</f><v></v>" in members[sheet]
    members[sheet] = members[sheet].replace(b"<f>SUM(B2:B3)</f><v></v>", b"<f>SUM(B2:B3)</f><v>56476</v>")
    with zipfile.ZipFile(tmp_path / "lying.xlsx", "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    text = artifacts.render("xlsx", (tmp_path / "lying.xlsx").read_bytes())
    assert "B4=27147 (formula =SUM(B2:B3); cached value in the file: 56476)" in text and "B4=56476" not in text
    members[sheet] = members[sheet].replace(b"<v>56476</v>", b"<v>27147</v>")  # twin: an honest cached value
    with zipfile.ZipFile(tmp_path / "honest.xlsx", "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    assert (
        "B4=27147 (formula =SUM(B2:B3))\n" in artifacts.render("xlsx", (tmp_path / "honest.xlsx").read_bytes()) + "\n"
    )


def test_docx_and_markdown_sections(tmp_path):
    doc = docx.Document()
    doc.add_heading("Findings", level=1)
    doc.add_paragraph("Renewables rose.")
    doc.add_heading("Method", level=2)
    doc.save(str(tmp_path / "memo.docx"))
    (tmp_path / "memo.md").write_text("# Findings\ntext\n## method\n")
    for fmt in ("docx", "md"):
        ok = artifacts.run_checks(
            [{"path": f"memo.{fmt}", "format": fmt, "sections": ["Findings", "Method"]}], str(tmp_path)
        )
        assert ok["all_passed"], ok
        bad = artifacts.run_checks(
            [{"path": f"memo.{fmt}", "format": fmt, "sections": ["Findings", "Risks"]}], str(tmp_path)
        )
        assert not bad["all_passed"] and "Risks" in next(c["detail"] for c in bad["checks"] if not c["passed"])


def test_a_link_is_never_followed(tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("source,net_generation\n")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(secret, out / "summary.csv")
    r = artifacts.run_checks([{"path": "summary.csv", "format": "csv", "columns": ["source"]}], str(out))
    assert not r["all_passed"] and "not a plain file" in r["checks"][0]["detail"]
    assert (
        artifacts.run_checks([{"path": "../secret.csv", "format": "csv"}], str(out))["checks"][0]["detail"]
        == "unsafe path"
    )


def test_entity_expansion_and_zip_bombs_are_refused(tmp_path):
    xlsx(tmp_path / "ok.xlsx")
    raw = zipfile.ZipFile(tmp_path / "ok.xlsx")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for item in raw.infolist():
            data = raw.read(item)
            if item.filename == "xl/workbook.xml":
                data = (
                    b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
                    + data.split(b"?>", 1)[-1]
                )
            z.writestr(item, data)
    (tmp_path / "bomb.xlsx").write_bytes(buf.getvalue())
    r = artifacts.run_checks([{"path": "bomb.xlsx", "format": "xlsx", "sheets": ["Summary"]}], str(tmp_path))
    assert not r["all_passed"] and "DOCTYPE" in r["checks"][-1]["detail"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", b"\0" * (artifacts.MAX_MEMBER + 10))
    (tmp_path / "big.docx").write_bytes(buf.getvalue())
    r = artifacts.run_checks([{"path": "big.docx", "format": "docx", "sections": ["A"]}], str(tmp_path))
    assert not r["all_passed"] and "too large" in r["checks"][-1]["detail"]


def test_the_script_writes_reward_json(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "summary.csv").write_text("source,net_generation\nTotal,1\n")
    (tmp_path / "checks.json").write_text(
        json.dumps(
            [
                {"path": "summary.csv", "format": "csv", "columns": ["source"]},
                {"path": "memo.md", "format": "md", "sections": ["Summary"]},
            ]
        )
    )
    # the checker is standard library only: run it isolated (-I), as test.sh does
    p = subprocess.run(
        [
            sys.executable,
            "-I",
            str(CHECKER),
            str(tmp_path / "checks.json"),
            str(tmp_path / "out"),
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads((tmp_path / "r.json").read_text()) == {"reward": 0.0, "checks_fraction": 0.75}
    assert "FAIL memo.md: exists" in p.stdout
