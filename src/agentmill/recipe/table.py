"""The ablation table of OpenThoughts-Agent: per-benchmark mean ± SE, raw average, normalised score, rank.

Normalised score = mean over benchmarks of the z-score of a variant's benchmark mean among all
variants' means for that benchmark, with the *population* standard deviation (ddof=0): so each
benchmark's z-scores have mean 0 and unit spread whatever the number of variants, and two variants
get exactly ±1. A benchmark where every variant ties (or only one variant has it) contributes z = 0.
A variant missing a benchmark is averaged over the benchmarks it has and flagged `missing`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from agentmill.errors import AgentmillError
from agentmill.rollout.status import mean_se

Results = dict[str, dict[str, list[float]]]  # variant -> benchmark -> scores (per seed or per task)


@dataclass
class Cell:
    mean: float
    se: float  # sample std / sqrt(n); 0 for a single score
    n: int


@dataclass
class Row:
    rank: int
    variant: str
    cells: dict[str, Cell]  # by benchmark; absent where the variant has no scores
    raw_average: float  # mean of the benchmark means
    normalized: float  # mean of the per-benchmark z-scores
    z: dict[str, float] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def benchmarks_of(results: Results) -> list[str]:
    """All benchmarks, in first-seen order (the order the eval wrote them)."""
    seen: dict[str, None] = {}
    for scores in results.values():
        seen.update(dict.fromkeys(scores))
    return list(seen)


def compute_table(results: Results) -> list[Row]:
    benchmarks = benchmarks_of(results)
    cells = {v: {b: Cell(*mean_se(list(s)), len(s)) for b, s in by_b.items() if s} for v, by_b in results.items()}
    z: dict[str, dict[str, float]] = {v: {} for v in results}
    for b in benchmarks:
        means = {v: c[b].mean for v, c in cells.items() if b in c}
        mu = sum(means.values()) / len(means) if means else 0.0
        sd = math.sqrt(sum((m - mu) ** 2 for m in means.values()) / len(means)) if means else 0.0
        for v, m in means.items():
            z[v][b] = (m - mu) / sd if sd > 1e-12 else 0.0  # all tied: no benchmark signal
    rows = []
    for v in results:
        have = [b for b in benchmarks if b in cells[v]]
        raw = sum(cells[v][b].mean for b in have) / len(have) if have else math.nan
        norm = sum(z[v].values()) / len(have) if have else math.nan
        rows.append(Row(0, v, cells[v], raw, norm, z[v], [b for b in benchmarks if b not in cells[v]]))
    rows.sort(key=lambda r: (_desc(r.normalized), _desc(r.raw_average), r.variant))
    for i, r in enumerate(rows, 1):
        r.rank = i
    return rows


def _desc(x: float) -> float:
    return math.inf if math.isnan(x) else -x  # NaN (no scores at all) ranks last


def load_results(path: Path) -> Results:
    """Read results.json ({variant: {benchmark: [scores]}}); errors name the offending key."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise AgentmillError(f"{path}: cannot read results: {e}") from e
    return check_results(data, str(path))


def check_results(data: object, where: str) -> Results:
    if not isinstance(data, dict):
        raise AgentmillError(f"{where}: expected an object {{variant: {{benchmark: [scores]}}}}")
    for v, by_b in data.items():
        if not isinstance(by_b, dict):
            raise AgentmillError(f"{where}: {v!r}: expected an object {{benchmark: [scores]}}")
        check_scores(by_b, f"{where}: {v!r}")
    return data


def check_scores(data: object, where: str) -> dict[str, list[float]]:
    if not isinstance(data, dict):
        raise AgentmillError(f"{where}: expected an object {{benchmark: [scores]}}")
    for b, scores in data.items():
        if not isinstance(scores, list):
            raise AgentmillError(
                f"{where}: benchmark {b!r}: expected a list of numbers, got {type(scores).__name__} {scores!r}"
            )
        bad = next((i for i, s in enumerate(scores) if not _is_number(s)), None)
        if bad is not None:
            raise AgentmillError(
                f"{where}: benchmark {b!r}: expected a list of numbers; item {bad} is "
                f"{type(scores[bad]).__name__} {scores[bad]!r}"
            )
    return data


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _columns(rows: list[Row], digits: int) -> tuple[list[str], list[list[str]]]:
    benchmarks: list[str] = []
    for r in rows:
        benchmarks += [b for b in list(r.cells) + r.missing if b not in benchmarks]
    header = ["Rank", "Variant", *benchmarks, "Raw Avg", "Normalized"]
    body = []
    for r in rows:
        cells = [
            f"{r.cells[b].mean:.{digits}f} ± {r.cells[b].se:.{digits}f}" if b in r.cells else "—" for b in benchmarks
        ]
        name = r.variant + (" *" if r.missing else "")
        body.append([str(r.rank), name, *cells, f"{r.raw_average:.{digits}f}", f"{r.normalized:+.2f}"])
    return header, body


def render_table(rows: list[Row], *, digits: int = 2, title: str | None = None) -> Table:
    header, body = _columns(rows, digits)
    table = Table(
        title=title,
        caption="* missing a benchmark: averaged over the ones it has" if any(r.missing for r in rows) else None,
    )
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 1 else "right")
    for line in body:
        table.add_row(*line)
    return table


def render_text(rows: list[Row], *, digits: int = 2) -> str:
    """Plain aligned columns, for logs and files (no terminal styling)."""
    header, body = _columns(rows, digits)
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    fmt = lambda line: "  ".join(c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))  # noqa: E731
    lines = [fmt(header), "  ".join("-" * w for w in widths), *map(fmt, body)]
    if any(r.missing for r in rows):
        lines.append("* missing a benchmark: averaged over the ones it has")
    return "\n".join(line.rstrip() for line in lines) + "\n"
