"""`agentmill synth ...`: failure-driven synthesis commands (a typer sub-app; cli.py adds it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentmill.errors import AgentmillError

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Failure-driven synthesis (AutoSynthData): verified tool tasks from a target model's failures.",
)
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)  # "[roles.judge]" is text, not markup
    raise typer.Exit(2)


class _Progress:
    """Rich progress: boxes finished of the slot budget, accepted, and the last gate verdicts."""

    def __init__(self, progress: Progress, total: int):
        self.p = progress
        self.boxes = progress.add_task("boxes", total=total, stats="")
        self.accepted = self.rejected = self.started = 0
        self.total = total
        self.failed: dict[str, int] = {}
        self.plain = not progress.console.is_terminal  # a log file or a pipe: one line per finished box instead

    def __call__(self, kind: str, **info) -> None:
        if kind == "local_model":
            self.p.console.print(
                f"starting the embedded model for {', '.join(info['roles'])} (SmolLM2-135M: a smoke-test "
                "model, not a teacher)",
                highlight=False,
            )
        elif kind == "pause":
            self.p.console.print(
                f"[yellow]paused {info['seconds']:.0f}s:[/yellow] {escape(info['what'])}", highlight=False
            )
        if kind == "gate" and not info["passed"]:
            key = f"{info['gate']}:{info['code']}"
            self.failed[key] = self.failed.get(key, 0) + 1
        elif kind == "box_start":
            self.started += 1
            if self.started > self.total:  # multiply variants beyond the slot budget
                self.total = self.started
                self.p.update(self.boxes, total=self.total)
        elif kind == "box_done":
            self.accepted += info["accepted"]
            self.rejected += not info["accepted"]
            self.p.advance(self.boxes)
            if self.plain:
                done = self.accepted + self.rejected
                self.p.console.print(
                    f"box {info['candidate']}: {'accepted' if info['accepted'] else 'not accepted'} "
                    f"({done} of {self.total} boxes; accepted {self.accepted})",
                    highlight=False,
                    markup=False,
                )
        top = ", ".join(f"{k} {v}" for k, v in sorted(self.failed.items(), key=lambda kv: -kv[1])[:3])
        self.p.update(self.boxes, stats=f"accepted {self.accepted}  rejected {self.rejected}  {top}")


@app.command("run")
def run_cmd(
    config_path: Path = typer.Argument(..., metavar="CONFIG", help="The synthesis config (TOML)."),
    out: Path = typer.Option(..., "--out", help="Output folder: synth.sqlite, tasks/, accepted.jsonl (resumes)."),
    no_report: bool = typer.Option(False, "--no-report", help="Do not write OUT/report.html at the end."),
    no_preflight: bool = typer.Option(
        False, "--no-preflight", help="Skip the one-token request per role's endpoint that checks them before any work."
    ),
) -> None:
    """Run synthesis (resumes when OUT holds an earlier run of it)."""
    from agentmill.exit_codes import INFRA
    from agentmill.models.outages import outage_lines
    from agentmill.models.preflight import run_preflight
    from agentmill.runtime.signals import sigterm_as_interrupt
    from agentmill.synth.clients import role_probes
    from agentmill.synth.config import load_config
    from agentmill.synth.report import write_report
    from agentmill.synth.run import run_synth

    try:
        config = load_config(config_path)
        if not no_preflight:
            run_preflight(role_probes(config, str(config_path)))  # before OUT is written
    except AgentmillError as e:
        _fail(str(e))
    total = config.synth.max_slots  # the slot budget; variants add to it as they are planned
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[stats]}"),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        tracker = _Progress(progress, total)
        # SIGTERM ends the run as Ctrl-C does: the boxes are cancelled and the embedded model's server (its own
        # session, so no group kill reaches it) is stopped on the way out, never left behind
        with sigterm_as_interrupt() as stop:
            try:
                summary = asyncio.run(run_synth(config, out, on_event=tracker))
            except AgentmillError as e:
                _fail(str(e))
            except KeyboardInterrupt:
                err.print(
                    f"{stop.how}; finished boxes are kept, boxes in flight give their slots back; run the same "
                    f"command again to resume from {out}",
                    highlight=False,
                )
                raise typer.Exit(stop.exit_code) from None
    for problem in summary["card_problems"]:
        err.print(f"[yellow]card:[/yellow] {escape(problem)}", highlight=False)
    if summary.get("budget_spent"):
        err.print(
            f"[yellow]stopped:[/yellow] {escape(summary['budget_spent'])}; no new box started (raise the budget "
            "and run the same command to resume)",
            highlight=False,
        )
    err.print(
        f"accepted {summary['accepted']} target samples and {summary['multiplied']} variants in "
        f"{summary['seconds']:.1f}s -> {out / 'tasks'}",
        highlight=False,
    )
    _print_funnel(out)
    if not no_report:
        err.print(f"report: {write_report(out)}", highlight=False)
    outages = [r for r in summary.get("outages", []) if (r or "").startswith("infra:")]
    if outages:
        err.print(
            f"{len(outages)} boxes ended by endpoint failures (their slots are given back; the same command "
            "runs them again):",
            highlight=False,
        )
        for line in outage_lines(r.removeprefix("infra:").strip() for r in outages):
            err.print(f"  {line}", highlight=False)
        if summary["accepted"] == 0 and summary["multiplied"] == 0:
            raise typer.Exit(INFRA)


def _print_funnel(out: Path) -> None:
    """One line per gate: passed of entered, and the failures by code."""
    from agentmill.synth.report import funnel
    from agentmill.synth.store import SynthStore

    store = SynthStore.open_existing(out)
    try:
        for row in funnel(store):
            failed = ", ".join(f"{code} {n}" for code, n in sorted(row["failed"].items(), key=lambda kv: -kv[1]))
            err.print(
                f"  {row['gate']:<9} {row['passed']}/{row['entered']}" + (f"  ({failed})" if failed else ""),
                highlight=False,
            )
    finally:
        store.close()


@app.command("report")
def report_cmd(
    out: Path = typer.Argument(..., metavar="OUT", help="A synth output folder."),
    dest: Path | None = typer.Option(None, "--out", help="HTML file (default OUT/report.html)."),
) -> None:
    """Write the HTML report of a synthesis run: funnel, diagnoses, coverage, ballots, cost and time."""
    from agentmill.synth.report import write_report

    try:
        err.print(f"report: {write_report(out, dest)}", highlight=False)
    except AgentmillError as e:
        _fail(str(e))


@app.command("export")
def export_cmd(
    out: Path = typer.Argument(..., metavar="OUT", help="A synth output folder."),
    fmt: str = typer.Option(..., "--format", "-f", help="trl | sharegpt | harbor"),
    dest: Path = typer.Option(..., "--out", "-o", help="Output file: .jsonl or .parquet"),
    reasoning: str = typer.Option("think", "--reasoning", help="think | drop"),
    filters_file: Path | None = typer.Option(None, "--filters", help="TOML file with a [filters] table"),
    min_turns: int | None = typer.Option(
        None, "--min-turns", help="Minimum assistant turns (default: fits the agent, 2 for the tools agent)."
    ),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Drop traces longer than this."),
    tokenizer: Path | None = typer.Option(None, "--tokenizer", help="for --max-tokens"),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="Write an empty file when nothing is kept."),
) -> None:
    """SFT rows: the accepted samples' verified solver trajectories, filtered as `agentmill export` does."""
    from agentmill.synth.sft_export import export_synth
    from agentmill.traces.filters import FilterSpec
    from agentmill.traces.render import Reasoning

    if reasoning not in ("think", "drop"):  # as `agentmill export` says; anything else used to mean drop
        _fail("--reasoning: use think or drop")
    mode: Reasoning = "think" if reasoning == "think" else "drop"
    try:
        spec = (FilterSpec.from_toml(filters_file) if filters_file else FilterSpec()).merged(
            min_turns=min_turns, max_tokens=max_tokens
        )
        report, notes = export_synth(
            out, fmt, dest, spec=spec, reasoning=mode, tokenizer=tokenizer, allow_empty=allow_empty
        )
    except (AgentmillError, ValueError) as e:
        _fail(str(e).splitlines()[-1] if isinstance(e, ValueError) else str(e))
    for note in notes:
        err.print(f"note: {note}", highlight=False)
    for step in report.funnel:
        err.print(f"  {step.name:<22} kept {step.kept}  dropped {step.dropped}", highlight=False)
    err.print(f"{report.rows} rows -> {report.path}", highlight=False)


@app.command("decontaminate")
def decontaminate_cmd(
    out: Path = typer.Argument(..., metavar="OUT", help="A synth output folder."),
    benchmark: list[Path] = typer.Option(..., "--benchmark", "-b", help="An evaluation task folder (repeatable)."),
    ngram: int = typer.Option(13, "--ngram", help="Shared word n-gram length that counts as overlap."),
) -> None:
    """Check accepted tasks against evaluation folders (the recipe's decontamination filter); exit 1 on overlap."""
    from agentmill.synth.decontam import REPORT, check_output
    from agentmill.synth.store import SynthStore

    try:
        SynthStore.open_existing(out).close()
        report = check_output(out, [str(b) for b in benchmark], ngram)
    except AgentmillError as e:
        _fail(str(e))
    for name, reason in sorted(report["overlaps"].items()):
        err.print(f"overlap: {name}: {reason}", highlight=False, markup=False)
    err.print(
        f"{len(report['overlaps'])} of {report['checked']} accepted tasks overlap "
        f"{report['benchmark_tasks']} evaluation tasks -> {out / REPORT}",
        highlight=False,
    )
    if report["overlaps"]:
        raise typer.Exit(1)
