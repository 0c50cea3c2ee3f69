"""`agentmill export`: run folder -> filtered, rendered, redacted rows in a training framework's format.

Streaming end to end: trials are read, filtered, rendered, redacted and written one at a time, so
memory does not grow with the run (Parquet is written in row groups). Zero rows is never silent:
the error names the rule that removed the last traces and how to relax it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

from agentmill.errors import AgentmillError
from agentmill.registry import load_target
from agentmill.traces.filters import FilterSpec, Funnel, FunnelStep, emptied_by, relax_hint
from agentmill.traces.formats import FORMATS, ROW_BUILDERS, dataset_info_entry, rl_rows
from agentmill.traces.parallel import RowMaker, export_rules, made_in_order, worker_count
from agentmill.traces.records import TraceRecord, iter_traces, trial_folders
from agentmill.traces.render import Reasoning, render
from agentmill.traces.tokens import TokenCounter
from agentmill.traces.writer import JsonLine, write_json, write_rows


class EmptyExport(AgentmillError):
    """No row survived; nothing was written."""


@dataclass
class ExportReport:
    path: Path
    rows: int
    funnel: list[FunnelStep]
    redactions: int
    tokens: str  # how tokens were counted
    skipped: list[str] = field(default_factory=list)  # unreadable trial folders
    extra_files: list[Path] = field(default_factory=list)


def export_run(
    run_dir: Path,
    fmt: str,
    out: Path,
    *,
    spec: FilterSpec,
    reasoning: Reasoning = "think",
    tokenizer: str | Path | None = None,
    allow_empty: bool = False,
    workers: int | None = None,
) -> ExportReport:
    """Export a rollout folder (or a recipe run folder's rollout) through the trace filters.
    Row formats go over `workers` processes (default: one per core for a large run; the same rows)."""
    if fmt not in FORMATS and fmt not in FOLDER_WRITERS:
        raise AgentmillError(f"--format: unknown format '{fmt}' (known: {', '.join((*FORMATS, *FOLDER_WRITERS))})")
    counter = TokenCounter.load(tokenizer)
    skipped: list[str] = []
    if fmt in ROW_BUILDERS:
        report, funnel = _export_rows(
            trial_folders(run_dir), fmt, out, spec, counter, reasoning, allow_empty, workers, skipped
        )
    else:
        funnel = Funnel(export_rules(spec, counter, fmt, reasoning))
        kept = (r for r in iter_traces(run_dir, errors=skipped) if funnel.admit(r) is None)
        report = write_records(kept, fmt, out, reasoning=reasoning, allow_empty=allow_empty)
    return _finished(report, funnel, counter, skipped, allow_empty)


def export_trials(
    folders: Sequence[Path],
    fmt: str,
    out: Path,
    *,
    spec: FilterSpec,
    reasoning: Reasoning = "think",
    tokenizer: str | Path | None = None,
    allow_empty: bool = False,
    workers: int | None = None,
) -> ExportReport:
    """Export chosen trial folders (from one run or several, e.g. `agentmill synth export`'s ballot runs) as
    rows, through the same filters and row rules as `export_run`."""
    if fmt not in ROW_BUILDERS:
        raise AgentmillError(f"--format: '{fmt}' is not a row format here (use one of: {', '.join(ROW_BUILDERS)})")
    counter = TokenCounter.load(tokenizer)
    skipped: list[str] = []
    report, funnel = _export_rows(folders, fmt, out, spec, counter, reasoning, allow_empty, workers, skipped)
    return _finished(report, funnel, counter, skipped, allow_empty)


def _finished(
    report: ExportReport, funnel: Funnel, counter: TokenCounter, skipped: list[str], allow_empty: bool
) -> ExportReport:
    """The report with its funnel, tokenizer and skipped folders; an empty export is an error unless allowed."""
    report.funnel, report.tokens, report.skipped = funnel.steps(), counter.label, skipped
    if report.rows == 0 and not allow_empty:
        raise EmptyExport(empty_message(report.funnel, recipe=False))
    return report


def _export_rows(
    folders: Sequence[Path],
    fmt: str,
    out: Path,
    spec: FilterSpec,
    counter: TokenCounter,
    reasoning: Reasoning,
    allow_empty: bool,
    workers: int | None,
    skipped: list[str],
) -> tuple[ExportReport, Funnel]:
    """One row per kept trial, made here or in worker processes (parallel.py), counted and written here in folder order."""
    maker_args = (spec, counter, fmt, reasoning)
    maker = RowMaker(*maker_args)
    counts = {"redactions": 0}

    def lines() -> Iterator[JsonLine]:
        for made in made_in_order(folders, maker, maker_args, worker_count(workers, len(folders))):
            if made.passed is None:
                skipped.append(cast(str, made.skipped))  # set whenever passed is None
                continue
            maker.funnel.count(made.passed)
            if made.line is not None:
                counts["redactions"] += made.redactions
                yield made.line

    rows = write_rows(lines(), out, keep_empty=allow_empty)
    return _rows_report(fmt, out, rows, counts["redactions"], allow_empty), maker.funnel


def write_records(
    records: Iterable[TraceRecord], fmt: str, out: Path, *, reasoning: Reasoning = "think", allow_empty: bool = False
) -> ExportReport:
    """Render and write already-filtered records (the recipe's export stage); rows -> `out`."""
    if fmt in FOLDER_WRITERS:  # one folder per run (harbor-job): `rows` counts the trials written
        write = cast(Callable[..., tuple[int, int]], load_target(FOLDER_WRITERS[fmt]))
        trials, redactions = write(records, out, allow_empty=allow_empty)
        return ExportReport(out, trials, [], redactions, "")
    counts = {"redactions": 0}
    rows = write_rows(stream_rows(fmt, records, reasoning, counts), out, keep_empty=allow_empty)
    return _rows_report(fmt, out, rows, counts["redactions"], allow_empty)


def _rows_report(fmt: str, out: Path, rows: int, redactions: int, allow_empty: bool) -> ExportReport:
    report = ExportReport(out, rows, [], redactions, "")
    if fmt == "sharegpt" and (rows or allow_empty):
        report.extra_files.append(merge_dataset_info(out))
    return report


# Formats written as a folder, not as rows: "module:function", imported when used (the Harbor job
# writer lives with Harbor's other formats in interop/harbor/, which builds on traces)
FOLDER_WRITERS = {"harbor-job": "agentmill.interop.harbor.job_export:write_harbor_job"}


def stream_rows(fmt: str, records: Iterable[TraceRecord], reasoning: Reasoning, counts: dict) -> Iterator[dict]:
    """One row per record (rl: one per task, after the last record); counts["redactions"] grows as rows go."""
    if fmt == "rl":
        yield from rl_rows(_slim(records))
        return
    builder = ROW_BUILDERS[fmt]
    for rec in records:
        rendered = render(rec.trajectory, reasoning=reasoning)
        counts["redactions"] += rendered.redactions
        yield builder(rec, rendered)


def _slim(records: Iterable[TraceRecord]) -> list[TraceRecord]:
    """RL rows need every trial's outcome but only one trajectory per task: the others are not kept."""
    first: dict[str | None, TraceRecord] = {}  # by task hash (None: a trial without one)
    out = []
    for rec in records:
        head = first.setdefault(rec.trial.get("task_hash"), rec)
        out.append(rec if head is rec else replace(rec, trajectory=head.trajectory))
    return out


def empty_message(funnel: list[FunnelStep], *, recipe: bool) -> str:
    """Why there are no rows, and what to change. Nothing was written."""
    allow = "set allow_empty = true on the export" if recipe else "pass --allow-empty to write an empty file"
    if not funnel or funnel[0].kept == 0:
        return f"0 rows: the run has no finished trials to export ({allow})"
    step = emptied_by(funnel)
    if step is None:  # every trace passed the filters; the format made no row of them
        return f"0 rows from {funnel[-1].kept} traces ({allow})"
    return (
        f"0 rows: the trace filter '{step.name}' ({step.description}) removed the last {step.dropped} "
        f"trace{'s' if step.dropped != 1 else ''}: {relax_hint(step.name, recipe=recipe)}, or {allow}"
    )


def merge_dataset_info(out: Path) -> Path:
    """Add (or replace) this file's entry in the dataset_info.json beside it, keeping every other entry."""
    info = out.parent / "dataset_info.json"
    data: dict = {}
    if info.exists():
        try:
            data = json.loads(info.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise AgentmillError(f"{info}: cannot merge into it: {e}") from None
        if not isinstance(data, dict):
            raise AgentmillError(
                f"{info}: cannot merge into it: expected a JSON object of datasets, got {type(data).__name__}"
            )
    data.update(dataset_info_entry(out.stem, out.name))
    write_json(data, info)
    return info
