"""An office-file grounded task for the tests: the core file is the corpus's Iowa electricity
workbook (.xlsx), the deliverables are a workbook with a SUM formula and a Word memo; the graph's
facts are cells of the workbook. The teacher's script reads the workbook with openpyxl and writes
both deliverables with openpyxl and python-docx, inside the sandbox; its `year` decides whether
the numbers are right (2017, what the statement asks) or wrong (2016)."""

from __future__ import annotations

import shutil
from pathlib import Path

from agentmill.grounded.graph import GraphDraft, check_facts
from agentmill.grounded.records import Spec, Workspace
from agentmill.grounded.seeds import candidate_seeds
from agentmill.grounded.task_folder import write_grounded_task

XLSX = "energy/iowa-electricity.xlsx"
DOCX = "energy/iowa-electricity-about.docx"
SHEET = "iowa-electricity"


def cell(node_id: str, ref: str, field: str, value: str) -> dict:
    return {
        "id": node_id,
        "file": XLSX,
        "field": field,
        "value": value,
        "locator": {"kind": "cell", "sheet": SHEET, "cell": ref},
    }


GRAPH = {
    "nodes": [
        cell("fossil", "C18", "2017 fossil fuels net generation", "29329"),
        cell("nuclear", "C35", "2017 nuclear net generation", "5214"),
        cell("renew", "C52", "2017 renewables net generation", "21933"),
        {
            "id": "units",
            "file": DOCX,
            "field": "unit",
            "value": "thousand megawatthours",
            "locator": {"kind": "span", "text": "thousand megawatthours"},
        },
    ],
    "edges": [{"src": "fossil", "dst": "renew", "relation": "compare"}],
}
SPEC = {
    "statement": "Total Iowa's 2017 net electricity generation by source in a workbook whose total is a formula, "
    "and write a memo with the total, the renewables share and the unit, citing the workbook you used.",
    "deliverables": [
        {
            "path": "summary.xlsx",
            "format": "xlsx",
            "sheets": ["Summary"],
            "formulas": True,
            "columns": ["source", "net_generation"],
        },
        {"path": "memo.docx", "format": "docx", "sections": ["Summary", "Method"]},
    ],
    "criteria": [
        {
            "id": "total",
            "artifact": "summary.xlsx",
            "requirement": "a Total row with the 2017 total",
            "expected": "56476",
            "weight": 2,
            "anchors": ["fossil", "nuclear", "renew"],
            "verification": "Sum of the three 2017 cells.",
        },
        {
            "id": "share",
            "artifact": "memo.docx",
            "requirement": "the renewables share",
            "expected": "38.8%",
            "weight": 1,
            "anchors": ["renew", "fossil", "nuclear"],
            "verification": "21933 / 56476.",
        },
        {
            "id": "unit",
            "artifact": "memo.docx",
            "requirement": "the unit",
            "expected": "thousand megawatthours",
            "weight": 1,
            "anchors": ["units"],
            "verification": "As the documentation says.",
        },
        {
            "id": "cite",
            "artifact": "memo.docx",
            "requirement": "cites the workbook",
            "expected": "iowa-electricity.xlsx",
            "weight": 1,
            "anchors": ["fossil"],
            "verification": "The memo names its source file.",
        },
    ],
}

SCRIPT = """mkdir -p /app/output && python3 - <<'PY'
import docx, openpyxl
year = "{year}"
rows = list(openpyxl.load_workbook("/app/energy/iowa-electricity.xlsx", read_only=True).active.iter_rows(values_only=True))
picked = [(r[1], r[2]) for r in rows[1:] if str(r[0]).startswith(year)]
book = openpyxl.Workbook()
sheet = book.active
sheet.title = "Summary"
sheet.append(["source", "net_generation"])
for source, value in picked:
    sheet.append([source, value])
sheet.append(["Total", "=SUM(B2:B%d)" % (len(picked) + 1)])
book.save("/app/output/summary.xlsx")
total = sum(v for _, v in picked)
memo = docx.Document()
memo.add_heading("Summary", 1)
memo.add_paragraph("In %s Iowa generated %d thousand megawatthours; %.1f%% came from renewables."
                   % (year, total, 100 * dict(picked)["Renewables"] / total))
memo.add_heading("Method", 1)
memo.add_paragraph("Summed the rows of iowa-electricity.xlsx by source.")
memo.save("/app/output/memo.docx")
PY
"""
RIGHT = SCRIPT.format(year="2017")
WRONG = SCRIPT.format(year="2016")


def office_task(tmp_path: Path, corpus: Path, **kw) -> Path:
    ws_dir = tmp_path / "ws"
    for rel in (XLSX, DOCX):
        (ws_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / rel, ws_dir / rel)
    ws = Workspace(
        seed=candidate_seeds()[0],
        files=[
            {"path": XLSX, "source": "c", "role": "core", "sha256": "-"},
            {"path": DOCX, "source": "c", "role": "supporting", "sha256": "-"},
        ],
    )
    graph = check_facts(ws, ws_dir, GraphDraft.model_validate(GRAPH))
    assert len(graph.nodes) == len(GRAPH["nodes"]), graph.dropped
    return write_grounded_task(tmp_path / "task", ws, ws_dir, graph, Spec.model_validate(SPEC), **kw)
