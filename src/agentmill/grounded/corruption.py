"""Fine-grained corruption of the evidence a judge sees, beside removing a whole file: what the
paper's sensitivity analysis varies to show the judge reads the anchors, not just their presence.

Each kind touches only the facts cited from one file (or `file#sheet`), in copies (the graph and
the workspace folder); the deliverables are never touched:

- `numbers`: every cited numeric fact is changed (the i-th by x(1 + 0.1 i) + 1, shown as it was
  written: not one common factor, which would leave every share and ratio as it was), in the graph
  and in the file's copy at its locator, so the evidence and the excerpt agree on the wrong value;
- `rows`: every cited table row is deleted from the file's copy, and the fact says so;
- `citations`: every cited row or cell locator points at the next row instead, with the value
  that is really there, so the evidence is self-consistent but cites the wrong place.

Spans (text facts) have no row or number: `numbers` and `rows` leave them, `citations` too.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path
from typing import Literal

from agentmill.grounded import readers
from agentmill.grounded.locate import extract
from agentmill.grounded.records import FactNode, Graph

Kind = Literal["numbers", "rows", "citations"]
KINDS: tuple[str, ...] = ("numbers", "rows", "citations")


def targets(node: FactNode, target: str) -> bool:
    return node.file == target or f"{node.file}#{node.locator.sheet}" == target


def corrupt(kind: Kind, graph: Graph, ws_dir: Path, target: str, dest: Path) -> tuple[Graph, Path]:
    """(graph, workspace copy) with the facts cited from `target` corrupted as `kind` says."""
    ws = dest / "workspace"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(ws_dir, ws, symlinks=False)
    nodes = []
    doomed: dict[tuple[str, str | None], set[int]] = {}  # rows: deleted once per file, bottom up
    changed: list[str] = []
    for n in graph.nodes:
        if not targets(n, target) or n.locator.kind not in ("row_field", "cell"):
            nodes.append(n)
            continue
        path = ws / n.file
        if kind == "numbers":
            wrong = _wrong(n.value, len(changed) + 1)
            if wrong is None:
                nodes.append(n)
                continue
            _set(path, n, wrong)
            changed.append(n.id)
            nodes.append(n.model_copy(update={"value": wrong}))
        elif kind == "rows":
            if (row := _row_index(n)) and row > 1:
                doomed.setdefault((n.file, n.locator.sheet), set()).add(row)
            nodes.append(n.model_copy(update={"value": "(row missing from the file)"}))
        else:
            moved = _next_row(n)
            value = extract(ws / n.file, moved.locator)
            nodes.append(moved.model_copy(update={"value": value if value is not None else "(no value there)"}))
    for (file, sheet), rows in doomed.items():
        _table_edit(
            ws / file,
            sheet,
            lambda table, rows=rows: [table.pop(r - 1) for r in sorted(rows, reverse=True) if r <= len(table)],
        )
    return Graph(nodes=nodes, edges=graph.edges, dropped=graph.dropped), ws


def _wrong(value: str, i: int) -> str | None:
    text = value.replace(",", "").strip()
    try:
        x = float(text)
    except ValueError:
        return None
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{x * (1 + 0.1 * i) + 1:.{decimals}f}"


def _row_index(n: FactNode) -> int | None:
    """1-based sheet row of the fact (header = row 1)."""
    if n.locator.kind == "row_field":
        return (n.locator.row or 0) + 1
    from agentmill.grounded.artifacts import _col_row

    return _col_row(n.locator.cell or "")[1] or None


def _next_row(n: FactNode) -> FactNode:
    loc = n.locator
    if loc.kind == "row_field":
        if loc.row is None:  # a checked graph has none such: its row_field facts were read at their row
            raise TypeError(f"fact {n.id}: a row_field locator without a row")
        return n.model_copy(update={"locator": loc.model_copy(update={"row": loc.row + 1})})
    from agentmill.grounded.artifacts import _col_row

    col, row = _col_row(loc.cell or "")
    return n.model_copy(update={"locator": loc.model_copy(update={"cell": f"{col}{row + 1}"})})


def _table_edit(path: Path, sheet: str | None, edit) -> None:
    """Apply edit(rows) to a csv or an xlsx sheet's rows (lists of cell values, header first)."""
    kind = readers.fmt(path)
    if kind in ("csv", "tsv"):
        delim = "\t" if kind == "tsv" else ","
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig")), delimiter=delim))
        edit(rows)
        buf = io.StringIO()
        csv.writer(buf, delimiter=delim, lineterminator="\n").writerows(rows)
        path.write_text(buf.getvalue(), encoding="utf-8")
    elif kind == "xlsx":
        import openpyxl

        wb = openpyxl.load_workbook(path)
        ws = wb[sheet] if sheet else wb.worksheets[0]
        rows = [list(r) for r in ws.iter_rows(values_only=True)]
        edit(rows)
        ws.delete_rows(1, ws.max_row)
        for r in rows:
            ws.append(r)
        wb.save(path)


def _set(path: Path, n: FactNode, value: str) -> None:
    row = _row_index(n)

    def edit(rows):
        if not row or row > len(rows):
            return
        if n.locator.kind == "row_field":
            if n.locator.field in rows[0]:
                rows[row - 1][rows[0].index(n.locator.field)] = value
        else:
            from agentmill.grounded.artifacts import _col_index, _col_row

            col = _col_index(_col_row(n.locator.cell or "")[0]) - 1
            if 0 <= col < len(rows[row - 1]):
                rows[row - 1][col] = float(value) if readers.fmt(path) == "xlsx" else value

    _table_edit(path, n.locator.sheet, edit)
