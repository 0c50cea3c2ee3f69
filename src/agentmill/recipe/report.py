"""One self-contained HTML report of a recipe run: funnel, source mix, trajectory shapes, rewards, outcomes.

The file has no external scripts, styles, fonts or images (it is mailed around and opened offline);
plots are inline SVG drawn here. Every section renders from whatever part of the run exists, so a
run that stopped before its rollouts still gets a report.
"""

from __future__ import annotations

import html
import json
import math
import sqlite3
import tomllib
from collections import Counter, defaultdict
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.recipe.records import StageReport, load_tasks
from agentmill.rollout.status import mean_se, summarize
from agentmill.runtime.atomic import write_text_atomic
from agentmill.traces.records import load_trace
from agentmill.traces.telemetry import Telemetry
from agentmill.verify.judge import NEEDS_JUDGE

UNKNOWN_SOURCE = "(not in tasks.jsonl)"
OUTCOME_ORDER = [
    "passed",
    "failed",
    "unjudged",
    "agent_error",
    "agent_timeout",
    "verifier_error",
    "verifier_timeout",
    "sandbox_error",
    "infra_error",
]


def esc(value) -> str:
    return html.escape(str(value), quote=True)


@dataclass
class Trial:
    task: str
    source: str
    outcome: str
    reward: float | None
    turns: int
    tokens: int  # assistant (completion) tokens of the trajectory


@dataclass
class RunData:
    run_dir: Path
    name: str
    recipe_text: str | None = None
    funnel: list[StageReport] | None = None
    sources: Counter | None = None  # final task set: tasks per source
    trials: list[Trial] | None = None  # None: no rollout folder
    summary: dict | None = None  # `agentmill status` of the rollout, when it has a ledger
    problems: list[str] = field(default_factory=list)


def load_run(run_dir: Path) -> RunData:
    data = RunData(run_dir, run_dir.resolve().name)
    recipe = run_dir / "recipe.toml"
    if recipe.exists():
        data.recipe_text = recipe.read_text(errors="replace")
        try:
            parsed = tomllib.loads(data.recipe_text)
            name = parsed.get("name") or (parsed.get("recipe") or {}).get("name")
            data.name = str(name) if name else data.name
        except (tomllib.TOMLDecodeError, AttributeError) as e:
            data.problems.append(f"recipe.toml: {e}")
    funnel = run_dir / "funnel.json"
    if funnel.exists():
        try:
            data.funnel = [StageReport.model_validate(s) for s in json.loads(funnel.read_text())]
        except (ValueError, TypeError) as e:
            data.problems.append(f"funnel.json: {str(e).splitlines()[0]}")
    source_of: dict[str, str] = {}
    tasks = run_dir / "tasks.jsonl"
    if tasks.exists():
        try:
            entries = load_tasks(tasks)
        except ValueError as e:
            data.problems.append(f"tasks.jsonl: {str(e).splitlines()[0]}")
        else:
            data.sources = Counter(t.source for t in entries)
            for t in entries:  # trials name the task folder, which is normally the entry's name
                source_of.setdefault(Path(t.path).name, t.source)
                source_of[t.name] = t.source
    # a recipe run points to its rollout; a rollout folder is its own (one kind of run folder for every verb)
    rollout = run_dir if (run_dir / "trials").is_dir() else run_dir / "rollout"
    if (rollout / "trials").is_dir():
        data.trials = _load_trials(rollout / "trials", source_of, data.problems)
    if (rollout / "ledger.sqlite").exists():
        try:
            data.summary = summarize(rollout)
        except (AgentmillError, sqlite3.Error) as e:
            data.problems.append(f"rollout/ledger.sqlite: {e}")
    return data


def _load_trials(trials_dir: Path, source_of: dict[str, str], problems: list[str]) -> list[Trial]:
    # Only the small JSON files: parsing every trajectory would make the report slow on large runs.
    out = []
    for folder in sorted(p for p in trials_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            trial = json.loads((folder / "trial.json").read_text())
            result = json.loads((folder / "result.json").read_text())
            tele_path = folder / "telemetry.json"
            tele = (
                Telemetry.model_validate_json(tele_path.read_text())
                if tele_path.exists()
                else load_trace(folder).telemetry
            )  # older runs: computed from the trajectory
            task = trial["task"]
            out.append(
                Trial(
                    task,
                    source_of.get(task, UNKNOWN_SOURCE),
                    result["outcome"],
                    result.get("reward"),
                    tele.assistant_turns,
                    tele.assistant_tokens or (result.get("tokens") or {}).get("completion", 0),
                )
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            problems.append(f"{folder.name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return out


# ---------------------------------------------------------------- SVG plots (no plotting library needed)


def _text_width(s: str) -> int:
    return 7 * len(s)  # ~7 px per character at 12 px sans-serif: enough to lay out labels


def _short(label: str, limit: int = 32) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def bar_chart(
    labels: list[str],
    values: list[float],
    *,
    ghosts: list[float] | None = None,
    errors: list[float] | None = None,
    value_text: list[str] | None = None,
    width: int = 860,
    caption: str = "",
) -> str:
    """Horizontal bars, one row per label. `ghosts` draws a light bar behind (e.g. count in),
    `errors` a whisker of ± error at the bar's end."""
    if not labels:
        return ""
    row, pad = 24, 6
    label_w = min(260, max(_text_width(_short(s)) for s in labels) + 12)
    texts = value_text or [_fmt(v) for v in values]
    value_w = max(_text_width(t) for t in texts) + 16
    plot_w = max(120, width - label_w - value_w)
    top = max([*values, *(ghosts or []), *[v + (e or 0) for v, e in zip(values, errors or [0] * len(values))]]) or 1
    scale = plot_w / top
    height = row * len(labels) + 2 * pad
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{esc(caption)}">'
    ]
    for i, (label, v) in enumerate(zip(labels, values)):
        y = pad + i * row
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end"><title>{esc(label)}</title>{esc(_short(label))}</text>'
        )
        end = v * scale
        if ghosts:
            parts.append(
                f'<rect class="ghost" x="{label_w}" y="{y + 3}" width="{ghosts[i] * scale:.1f}" height="{row - 6}"/>'
            )
            end = max(end, ghosts[i] * scale)
        parts.append(f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{v * scale:.1f}" height="{row - 6}"/>')
        if errors and errors[i]:
            lo, hi = label_w + (v - errors[i]) * scale, label_w + (v + errors[i]) * scale
            parts.append(
                f'<path class="whisker" d="M{lo:.1f} {y + 12}H{hi:.1f}M{lo:.1f} {y + 7}V{y + 17}M{hi:.1f} {y + 7}V{y + 17}"/>'
            )
            end = max(end, hi - label_w)
        parts.append(f'<text x="{label_w + end + 6:.1f}" y="{y + 16}">{esc(texts[i])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _bins(values: Sequence[float], max_bins: int = 20) -> list[float]:
    """Bin edges: one per integer when the range is small, else a 1-2-5 step giving <= max_bins bins."""
    lo, hi = min(values), max(values)
    if all(float(v).is_integer() for v in values) and hi - lo < max_bins:
        return [lo - 0.5 + i for i in range(int(hi - lo) + 2)]
    raw = (hi - lo) / max_bins or 1.0
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    n = max(1, math.ceil((hi - start) / step + 1e-9))
    if start + n * step <= hi:  # the maximum belongs to the last bin
        n += 1
    return [start + i * step for i in range(n + 1)]


def histogram(values: Sequence[float], *, xlabel: str, width: int = 500, height: int = 220) -> str:
    if not values:
        return '<p class="empty">No trajectories.</p>'
    edges = _bins(values)
    counts = [0] * (len(edges) - 1)
    for v in values:
        counts[min(len(counts) - 1, max(0, int((v - edges[0]) // (edges[1] - edges[0]))))] += 1
    left, right, top, bottom = 44, 12, 10, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    bar_w, peak = plot_w / len(counts), max(counts)
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="histogram of {esc(xlabel)}">',
        f'<path class="axis" d="M{left} {top}V{top + plot_h}H{left + plot_w}"/>',
        f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{peak}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end">0</text>',
    ]
    for i, c in enumerate(counts):
        h = plot_h * c / peak
        x = left + i * bar_w
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}">'
            f"<title>{esc(_range(edges[i], edges[i + 1]))}: {c}</title></rect>"
        )
    integer_bins = edges[1] - edges[0] == 1 and not float(edges[0]).is_integer()
    every = math.ceil(len(counts) / 8)  # at most ~8 tick labels so they never overlap
    for i in range(0, len(counts) + (0 if integer_bins else 1), every):
        x = left + (i + 0.5) * bar_w if integer_bins else left + i * bar_w
        label = _fmt(edges[i] + 0.5) if integer_bins else _fmt(edges[i])
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 15}" text-anchor="middle">{esc(label)}</text>')
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" class="muted">{esc(xlabel)}</text></svg>'
    )
    return "".join(parts)


def _range(a: float, b: float) -> str:
    return _fmt(a + 0.5) if b - a == 1 and not float(a).is_integer() else f"[{_fmt(a)}, {_fmt(b)})"


def _fmt(v: float) -> str:
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.3g}" if abs(v) < 1 else f"{v:,.1f}"


# ---------------------------------------------------------------- sections


def _table(header: list[str], rows: list[list], numeric: AbstractSet[int] = frozenset()) -> str:
    head = "".join(f"<th{' class=num' if i in numeric else ''}>{esc(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{esc(c)}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _missing(what: str) -> str:
    return f'<p class="empty">{esc(what)}</p>'


def _overview(d: RunData) -> str:
    facts = [
        ("Final tasks", f"{sum(d.sources.values()):,}" if d.sources is not None else "—"),
        ("Sources", str(len(d.sources)) if d.sources is not None else "—"),
    ]
    if d.trials is not None:
        rewards = [t.reward for t in d.trials if t.reward is not None]
        facts += [
            ("Trajectories", f"{len(d.trials):,}"),
            ("Passed", f"{sum(t.outcome == 'passed' for t in d.trials) / len(d.trials):.1%}" if d.trials else "—"),
            ("Mean reward", f"{sum(rewards) / len(rewards):.3f}" if rewards else "—"),
        ]
    if d.summary and d.summary.get("running"):
        facts.append(("Still running", str(d.summary["running"])))
    if d.summary and "1" in d.summary.get("pass_at_k", {}):
        p = d.summary["pass_at_k"]["1"]
        facts.append(("pass@1", f"{p['mean']:.3f} ± {p['se']:.3f}"))
    return (
        '<div class="facts">' + "".join(f"<div><b>{esc(v)}</b><span>{esc(k)}</span></div>" for k, v in facts) + "</div>"
    )


def _unjudged(d: RunData) -> str:
    """Loud: trials whose reward waits for a judge are neither passes nor failures, and not in the data."""
    n = sum(t.outcome == "unjudged" for t in d.trials or [])
    if not n:
        return ""
    return (
        f'<p class="problems"><b>{n:,} unjudged trial{"s" if n != 1 else ""}</b>: every check that ran passed, '
        f"but the reward {esc(NEEDS_JUDGE)}. They have no reward, are not counted as passed, and export drops them.</p>"
    )


def _funnel(d: RunData) -> str:
    if d.funnel is None:
        return _missing("No funnel.json in this run.")
    if not d.funnel:
        return _missing("funnel.json lists no stages.")
    rows = []
    for i, s in enumerate(d.funnel, 1):
        reasons = sorted(s.reasons().items(), key=lambda kv: (-kv[1], kv[0]))
        top = "; ".join(f"{r} ×{n}" for r, n in reasons[:3]) + (
            f"; +{len(reasons) - 3} more" if len(reasons) > 3 else ""
        )
        kept = f"{s.count_out / s.count_in:.0%}" if s.count_in else "—"
        rows.append(
            [
                i,
                s.stage,
                s.kind,
                f"{s.count_in:,}",
                f"{s.count_out:,}",
                kept,
                f"{len(s.dropped):,}",
                top,
                "; ".join(s.notes),
            ]
        )
    chart = bar_chart(
        [f"{i}. {s.stage}" for i, s in enumerate(d.funnel, 1)],
        [s.count_out for s in d.funnel],
        ghosts=[s.count_in for s in d.funnel],
        value_text=[f"{s.count_out:,} of {s.count_in:,}" for s in d.funnel],
        caption="tasks out of each stage (pale: tasks in)",
    )
    legend = '<p class="legend"><i class="sw bar"></i> out of the stage <i class="sw ghost"></i> into the stage</p>'
    return (
        chart
        + legend
        + _table(
            ["#", "Stage", "Kind", "In", "Out", "Kept", "Dropped", "Top drop reasons", "Notes"], rows, {0, 3, 4, 5, 6}
        )
    )


def _sources(d: RunData) -> str:
    if d.sources is None:
        return _missing("No tasks.jsonl in this run.")
    if not d.sources:
        return _missing("tasks.jsonl is empty.")
    items = sorted(d.sources.items(), key=lambda kv: (-kv[1], kv[0]))
    total = sum(d.sources.values())
    chart = bar_chart(
        [s for s, _ in items],
        [n for _, n in items],
        value_text=[f"{n:,} ({n / total:.0%})" for _, n in items],
        caption="tasks per source",
    )
    return chart + _table(["Source", "Tasks", "Share"], [[s, f"{n:,}", f"{n / total:.1%}"] for s, n in items], {1, 2})


def _finished_trials(d: RunData) -> list[Trial] | str:
    """The rollout's trials, or the note that says why a section has none to show."""
    if d.trials is None:
        return _missing("No rollout in this run (it stopped before rollouts, or they were not run).")
    if not d.trials:
        return _missing("The rollout has no finished trials yet.")
    return d.trials


def _stats(values: Sequence[float]) -> str:
    s = sorted(values)

    def q(p: float) -> float:  # nearest-rank percentile: no interpolation needed for a glance
        return s[min(len(s) - 1, int(p * len(s)))]

    return (
        f"n = {len(s):,} · mean {_fmt(sum(s) / len(s))} · median {_fmt(q(0.5))} · "
        f"p90 {_fmt(q(0.9))} · max {_fmt(s[-1])}"
    )


def _shapes(d: RunData) -> str:
    trials = _finished_trials(d)
    if isinstance(trials, str):
        return trials
    cells = []
    for title, values in (
        ("Assistant turns per trajectory", [t.turns for t in trials]),
        ("Assistant (completion) tokens per trajectory", [t.tokens for t in trials]),
    ):
        cells.append(
            f"<figure><figcaption>{esc(title)}</figcaption>{histogram(values, xlabel=title.split(' per ')[0].lower())}"
            f'<p class="muted">{esc(_stats(values))}</p></figure>'
        )
    return '<div class="pair">' + "".join(cells) + "</div>"


def _by_source(trials: list[Trial]) -> dict[str, list[Trial]]:
    groups: dict[str, list[Trial]] = defaultdict(list)
    for t in trials:
        groups[t.source].append(t)
    # Largest source first, as in the source mix; trials of unlisted tasks last.
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] == UNKNOWN_SOURCE, -len(kv[1]), kv[0])))


def _rewards(d: RunData) -> str:
    trials = _finished_trials(d)
    if isinstance(trials, str):
        return trials
    rows, labels, means, ses = [], [], [], []
    for source, mine in _by_source(trials).items():
        rewards = [t.reward for t in mine if t.reward is not None]
        m, se = mean_se(rewards)
        passed = sum(t.outcome == "passed" for t in mine) / len(mine)
        rows.append(
            [
                source,
                f"{len(mine):,}",
                f"{len(rewards):,}",
                f"{m:.3f} ± {se:.3f}" if rewards else "—",
                f"{passed:.1%}",
            ]
        )
        if rewards:
            labels.append(source)
            means.append(m)
            ses.append(se)
    chart = bar_chart(
        labels,
        means,
        errors=ses,
        value_text=[f"{m:.3f} ± {s:.3f}" for m, s in zip(means, ses)],
        caption="mean reward by source, ± standard error",
    )
    return chart + _table(["Source", "Trials", "With reward", "Mean reward ± SE", "Passed"], rows, {1, 2, 3, 4})


def _outcomes(d: RunData) -> str:
    trials = _finished_trials(d)
    if isinstance(trials, str):
        return trials
    seen = {t.outcome for t in trials}
    columns = [o for o in OUTCOME_ORDER if o in seen] + sorted(seen - set(OUTCOME_ORDER))
    totals = Counter(t.outcome for t in trials)
    rows = [
        [source, *(f"{Counter(t.outcome for t in mine)[o]:,}" for o in columns), f"{len(mine):,}"]
        for source, mine in _by_source(trials).items()
    ]
    rows.append(["All sources", *(f"{totals[o]:,}" for o in columns), f"{len(trials):,}"])
    chart = bar_chart(
        columns,
        [totals[o] for o in columns],
        value_text=[f"{totals[o]:,} ({totals[o] / len(trials):.0%})" for o in columns],
        caption="outcomes",
    )
    return chart + _table(["Source", *columns, "Trials"], rows, set(range(1, len(columns) + 2)))


STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;margin:0;background:#f6f7f9}
main{max-width:1120px;margin:0 auto;padding:24px 28px 48px;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 10px;border-bottom:1px solid #dde1e7;padding-bottom:4px}
.muted,.empty{color:#5b6473}.empty{font-style:italic}
table{border-collapse:collapse;margin:10px 0;font-size:13px}th,td{padding:4px 10px;border-bottom:1px solid #e6e9ee;text-align:left;vertical-align:top}
th{background:#f0f2f5}.num{text-align:right;font-variant-numeric:tabular-nums}
svg.chart{display:block;margin:6px 0;font-size:12px;fill:#1d2330}
svg .bar{fill:#3b6fb6}svg .ghost{fill:#c9d8ee}svg .whisker,svg .axis{stroke:#1d2330;stroke-width:1.2;fill:none}svg .muted{fill:#5b6473}
.legend{font-size:12px;color:#5b6473;margin:0}.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin:0 4px 0 10px}
.sw.bar{background:#3b6fb6}.sw.ghost{background:#c9d8ee}
.facts{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}.facts div{background:#f0f2f5;border-radius:6px;padding:8px 14px}
.facts b{display:block;font-size:18px}.facts span{font-size:12px;color:#5b6473}
.pair{display:flex;flex-wrap:wrap;gap:24px}figure{margin:0}figcaption{font-weight:600}
pre{background:#f0f2f5;padding:10px;overflow:auto;font-size:12px}.problems li,p.problems{color:#9b1c1c}
"""


def render_report(d: RunData) -> str:
    sections = [
        ("Funnel", _funnel(d)),
        ("Source mix", _sources(d)),
        ("Trajectories", _shapes(d)),
        ("Rewards by source", _rewards(d)),
        ("Outcomes", _outcomes(d)),
    ]
    body = [
        f"<h1>Recipe report: {esc(d.name)}</h1>",
        f'<p class="muted">Run folder {esc(d.run_dir)}</p>',
        _overview(d),
        _unjudged(d),
    ]
    body += [f"<section><h2>{esc(title)}</h2>{content}</section>" for title, content in sections]
    if d.problems:
        body.append(
            "<section><h2>Unreadable files</h2><ul class=problems>"
            + "".join(f"<li>{esc(p)}</li>" for p in d.problems)
            + "</ul></section>"
        )
    if d.recipe_text is not None:
        body.append(
            f"<section><h2>Recipe</h2><details><summary>recipe.toml as run</summary><pre>{esc(d.recipe_text)}</pre></details></section>"
        )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(d.name)} · agentmill recipe report</title>'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{STYLE}</style></head>'
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


def write_report(run_dir: Path, out: Path) -> Path:
    """Write the report of RUN to `out` (a file, or a folder to put report.html in); returns the file."""
    run_dir, out = Path(run_dir), Path(out)
    if not run_dir.is_dir():
        raise AgentmillError(f"{run_dir}: not a folder")
    if out.is_dir():
        out = out / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, render_report(load_run(run_dir)))
    return out
