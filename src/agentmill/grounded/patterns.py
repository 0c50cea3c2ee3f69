"""The fixed vocabulary of 16 execution patterns, and how an O*NET task is assigned one.

A pattern is how the work gets done on a computer, independent of the occupation. Each has cue
words (matched as whole-word stems in the DWA title first, then the task statement) and the input
file family it usually needs. A task whose text matches no cue gets no pattern and yields no seed:
nothing is forced into a pattern to fill the vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Pattern:
    name: str
    cues: tuple[str, ...]  # word stems
    file_family: str  # spreadsheet | tabular | document | mixed | structured


PATTERNS: tuple[Pattern, ...] = (
    Pattern("data analysis and reporting", ("analy", "statistic", "data", "trend"), "spreadsheet"),
    Pattern(
        "research and source synthesis", ("research", "literature", "investigat", "gather information"), "document"
    ),
    Pattern(
        "financial modeling and budgeting", ("budget", "financ", "cost", "price", "pricing", "revenue"), "spreadsheet"
    ),
    Pattern("forecasting and planning", ("forecast", "project future", "estimat", "plan"), "spreadsheet"),
    Pattern("compliance and policy review", ("complian", "regulat", "policy", "policies", "legal", "law"), "document"),
    Pattern("audit and reconciliation", ("audit", "reconcil", "verify", "discrepanc", "inspect record"), "tabular"),
    Pattern("scheduling and resource allocation", ("schedul", "allocat", "assign", "staffing"), "tabular"),
    Pattern("inventory and logistics tracking", ("inventor", "shipment", "logistic", "supplies", "stock"), "tabular"),
    Pattern("record keeping and data entry", ("record", "maintain files", "log ", "database", "enter data"), "tabular"),
    Pattern(
        "document drafting and editing",
        ("write", "writing", "draft", "edit", "prepare report", "prepare documentation"),
        "document",
    ),
    Pattern("communication and correspondence", ("correspond", "communicat", "notify", "email", "letter"), "document"),
    Pattern("evaluation and comparison", ("evaluat", "compar", "assess", "review"), "mixed"),
    Pattern("quality and performance monitoring", ("monitor", "quality", "performance", "measur"), "tabular"),
    Pattern("presentation and visualization", ("present", "chart", "graph", "visual", "map"), "spreadsheet"),
    Pattern(
        "procurement and vendor management", ("purchas", "procure", "vendor", "supplier", "contract", "bid"), "mixed"
    ),
    Pattern(
        "technical specification and configuration",
        ("specification", "configur", "design", "program", "software", "code"),
        "structured",
    ),
)
PATTERN_NAMES: tuple[str, ...] = tuple(p.name for p in PATTERNS)
FILE_FAMILIES: tuple[str, ...] = ("spreadsheet", "tabular", "document", "mixed", "structured")

# Real file formats -> family (used when a seed's real input files are known).
FORMAT_FAMILY = {
    "xlsx": "spreadsheet",
    "xls": "spreadsheet",
    "csv": "tabular",
    "tsv": "tabular",
    "json": "structured",
    "docx": "document",
    "pdf": "document",
    "md": "document",
    "txt": "document",
}


def _cue_re(cue: str) -> re.Pattern:
    return re.compile(r"\b" + re.escape(cue), re.IGNORECASE)


_COMPILED = [(p, [_cue_re(c) for c in p.cues]) for p in PATTERNS]


def classify(dwa_title: str, task: str) -> tuple[Pattern, str] | None:
    """The pattern and the cue that matched (from the DWA title first, then the task), or None."""
    for text in (dwa_title, task):
        best: tuple[int, int, Pattern, str] | None = None
        for order, (pattern, cues) in enumerate(_COMPILED):
            hits = [c.pattern for c in cues if c.search(text)]
            if hits and (best is None or len(hits) > best[0]):
                best = (len(hits), order, pattern, pattern.cues[[x.pattern for x in cues].index(hits[0])])
        if best:
            return best[2], best[3]
    return None


def pattern(name: str) -> Pattern:
    for p in PATTERNS:
        if p.name == name:
            return p
    raise KeyError(f"unknown execution pattern '{name}' (known: {', '.join(PATTERN_NAMES)})")
