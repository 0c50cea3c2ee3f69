"""Deterministic fact checks compiled from the spec and the evidence graph into the task's tests.

Without them a judge-less reward is format-only: a deliverable with the right columns and wrong
numbers passes. The graph already holds facts recovered from the files, and each criterion states
the value a correct deliverable must show; compiled here into checks the in-sandbox checker
(`artifacts.py`, standard library only) runs over the deliverable:

- `number`: a criterion whose `expected` is one number (56476, 38.8%, 1,234.5 USD) must find that
  number in its artifact, within half a unit of the last shown digit (of the expected value or of
  the deliverable's own rounding); a percentage may be written as a fraction. `basis` records how
  the value follows from the criterion's anchors (a cited value, their sum, difference, ratio or
  share), or `stated` when it does not (the compiler's own claim, which admission then tests).
- `text`: a short non-numeric `expected` equal to a cited span (a named entity, a unit, a label)
  must occur in the artifact (case and whitespace folded).
- `cite`: a workspace file name or `Sheet!A1` cell named in `expected` must be cited in the artifact.

Criteria whose expected value is a description ("21933 / 56476, to one decimal place") compile to
nothing: the judge scores what only a judge can.
"""

from __future__ import annotations

import re
from itertools import combinations

from agentmill.grounded.records import Criterion, Graph, Spec

_NUM = re.compile(r"^[^\d\-+.]{0,6}([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*(%?)\s*[A-Za-z$€£ ]{0,24}$")
_ANY_NUM = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_CELL = re.compile(r"(?<![\w.-])([A-Za-z][\w]{0,30})!\$?([A-Z]{1,3})\$?(\d{1,7})\b")
MAX_TEXT = 80


def parse_number(text: str) -> tuple[float, int, bool] | None:
    """(value, decimals shown, is percent) when `text` is one number with at most a unit; else None."""
    m = _NUM.match(text.strip())
    if not m or len(_ANY_NUM.findall(text)) != 1:
        return None
    digits = m.group(1).replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), decimals, m.group(2) == "%"


def _node_number(value: str) -> float | None:
    p = parse_number(value)
    return p[0] if p else None


def basis(value: float, tol: float, anchors: list[float]) -> str:
    """How `value` follows from the anchored numbers, or 'stated'."""

    def near(x: float) -> bool:
        return abs(x - value) <= tol

    if any(near(a) for a in anchors):
        return "cited value"
    if len(anchors) >= 2 and near(sum(anchors)):
        return "sum of anchors"
    for a, b in combinations(anchors, 2):
        if near(a - b) or near(b - a):
            return "difference of anchors"
        for x, y in ((a, b), (b, a)):
            if y and (near(x / y) or near(100 * x / y)):
                return "ratio of anchors"
    total = sum(anchors)
    if total and any(near(100 * a / total) or near(a / total) for a in anchors):
        return "share of the anchors' total"
    return "stated"


def compile_checks(spec: Spec, graph: Graph, files: list[str]) -> dict[str, list[dict]]:
    """deliverable path -> fact checks, for checks.json."""
    out: dict[str, list[dict]] = {d.path: [] for d in spec.deliverables}
    for c in spec.criteria:
        if c.artifact in out:
            out[c.artifact] += criterion_checks(c, graph, files)
    return out


def criterion_checks(c: Criterion, graph: Graph, files: list[str]) -> list[dict]:
    checks: list[dict] = []
    nodes = [n for a in c.anchors if (n := graph.node(a))]
    parsed = parse_number(c.expected)
    if parsed:
        value, decimals, percent = parsed
        tol = 0.5 * 10**-decimals
        anchored = [x for n in nodes if (x := _node_number(n.value)) is not None]
        checks.append(
            {
                "id": f"{c.id}:number",
                "criterion": c.id,
                "kind": "number",
                "value": value,
                "tol": tol,
                "percent": percent,
                "expected": c.expected,
                "basis": basis(value, tol, anchored),
                "anchors": list(c.anchors),
            }
        )
        return checks
    want = " ".join(c.expected.split())
    if want and len(want) <= MAX_TEXT and any(" ".join(n.value.split()).casefold() == want.casefold() for n in nodes):
        checks.append(
            {"id": f"{c.id}:text", "criterion": c.id, "kind": "text", "value": want, "anchors": list(c.anchors)}
        )
    names = {f.rsplit("/", 1)[-1] for f in files}
    for name in sorted(names):
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", c.expected):
            checks.append(
                {
                    "id": f"{c.id}:cite:{name}",
                    "criterion": c.id,
                    "kind": "cite",
                    "value": name,
                    "anchors": list(c.anchors),
                }
            )
    for sheet, col, row in _CELL.findall(c.expected):
        ref = f"{sheet.strip()}!{col}{row}"
        checks.append(
            {"id": f"{c.id}:cite:{ref}", "criterion": c.id, "kind": "cite", "value": ref, "anchors": list(c.anchors)}
        )
    return checks
