"""A self-contained HTML page for a ground store: coverage (sectors x execution patterns), the
admission funnel, and the distribution of judge quality scores."""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path

from agentmill.grounded.patterns import PATTERN_NAMES
from agentmill.grounded.pipeline import SeedOutcome
from agentmill.grounded.records import Seed
from agentmill.grounded.store_io import read_record, read_seeds


def load(store: Path) -> tuple[list[Seed], list[SeedOutcome]]:
    seeds = read_seeds(store / "seeds.jsonl")
    outcomes = [read_record(p, SeedOutcome) for p in sorted((store / "results").glob("*.json"))]
    return seeds, outcomes


def render(store: Path) -> str:
    seeds, outcomes = load(store)
    by_id = {s.seed_id: s for s in seeds}
    admitted = {o.seed_id for o in outcomes if o.task}
    cells = Counter((by_id[o].sector, by_id[o].pattern) for o in admitted if o in by_id)
    planned = Counter((s.sector, s.pattern) for s in seeds)
    sectors = sorted({s.sector for s in seeds})
    head = "".join(f"<th title='{html.escape(p)}'>{i + 1}</th>" for i, p in enumerate(PATTERN_NAMES))
    rows = "".join(
        f"<tr><th>{html.escape(sec)}</th>"
        + "".join(
            f"<td class='{'hit' if cells[(sec, p)] else ('plan' if planned[(sec, p)] else '')}'>"
            f"{cells[(sec, p)] or (planned[(sec, p)] and '·') or ''}</td>"
            for p in PATTERN_NAMES
        )
        + "</tr>"
        for sec in sectors
    )
    legend = "".join(f"<li>{html.escape(p)}</li>" for p in PATTERN_NAMES)
    stages = Counter(o.stage if o.error is None else f"failed at {o.stage} ({o.fault})" for o in outcomes)
    gates = Counter(a.admission.gate for o in outcomes for a in o.attempts)
    funnel = "".join(f"<tr><td>{html.escape(k)}</td><td>{v}</td></tr>" for k, v in sorted(stages.items()))
    funnel += "".join(f"<tr><td>attempts: {html.escape(k)}</td><td>{v}</td></tr>" for k, v in sorted(gates.items()))
    scores = [a.admission.quality for o in outcomes for a in o.attempts if a.admission.quality is not None]
    bins = Counter(min(9, int(q * 10)) for q in scores)
    top = max(bins.values(), default=1)
    hist = "".join(
        f"<div class='bar'><span style='height:{100 * bins[b] / top:.0f}px'></span>"
        f"<small>{b / 10:.1f}</small><small>{bins[b]}</small></div>"
        for b in range(10)
    )
    facts = sum(o.nodes_kept for o in outcomes), sum(o.nodes_dropped for o in outcomes)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>agentmill ground: {html.escape(store.name)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}
td.hit{{background:#7c7}}td.plan{{background:#eee}}.hist{{display:flex;align-items:flex-end;gap:4px}}
.bar{{display:flex;flex-direction:column;align-items:center}}.bar span{{width:24px;background:#58c;display:block}}</style></head><body>
<h1>Grounded synthesis: {html.escape(store.name)}</h1>
<p>{len(seeds)} seeds, {len(admitted)} admitted tasks; facts kept {facts[0]}, dropped as unrecoverable {facts[1]}.</p>
<h2>Coverage: sectors x execution patterns</h2><p>green: admitted tasks; grey dot: seeded, not admitted.</p>
<table id="coverage"><tr><th></th>{head}</tr>{rows}</table><ol>{legend}</ol>
<h2>Admission funnel</h2><table id="funnel">{funnel}</table>
<h2>Judge quality scores ({len(scores)} judged attempts)</h2><div class="hist" id="scores">{hist}</div>
<script type="application/json" id="data">{html.escape(json.dumps({"stages": stages, "gates": gates, "scores": scores}))}</script>
</body></html>"""


def write_report(store: Path, out: Path | None = None) -> Path:
    out = out or store / "report.html"
    out.write_text(render(store), encoding="utf-8")
    return out
