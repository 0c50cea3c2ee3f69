"""`agentmill export`: run folder -> filtered, rendered, redacted rows in a training framework's format."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.traces.filters import FilterSpec, FunnelStep, apply_filters, rules
from agentmill.traces.formats import FORMATS, build_rows, dataset_info_entry
from agentmill.traces.records import TraceRecord, iter_traces
from agentmill.traces.render import Reasoning, render
from agentmill.traces.tokens import TokenCounter
from agentmill.traces.writer import write_json, write_rows


@dataclass
class ExportReport:
    path: Path
    rows: int
    funnel: list[FunnelStep]
    redactions: int
    tokens: str  # how tokens were counted
    skipped: list[str] = field(default_factory=list)  # unreadable trial folders
    extra_files: list[Path] = field(default_factory=list)


def export_run(run_dir: Path, fmt: str, out: Path, *, spec: FilterSpec, reasoning: Reasoning = "think",
               tokenizer: str | Path | None = None) -> ExportReport:
    if fmt not in FORMATS:
        raise AgentmillError(f"--format: unknown format '{fmt}' (known: {', '.join(FORMATS)})")
    counter = TokenCounter.load(tokenizer)
    skipped: list[str] = []
    records = list(iter_traces(run_dir, errors=skipped))

    def rendered(r: TraceRecord):
        x = render(r.trajectory, reasoning=reasoning)
        return x.messages, x.tools or None

    kept, funnel = apply_filters(records, rules(spec, counter, rendered))
    rows, redactions = build_rows(fmt, kept, reasoning)
    write_rows(rows, out)
    report = ExportReport(out, len(rows), funnel, redactions, counter.label, skipped)
    if fmt == "sharegpt":
        info = out.parent / "dataset_info.json"
        write_json(dataset_info_entry(out.stem, out.name), info)
        report.extra_files.append(info)
    return report
