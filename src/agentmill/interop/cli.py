"""`agentmill import harbor`: registered on the `import` command group by cli.py (logic: harbor/job_import.py)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

console = Console(stderr=True, soft_wrap=True)


def import_harbor_cmd(
    job_dir: Path = typer.Argument(..., help="A Harbor job folder (config.json, result.json, one folder per trial)."),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Run folder to write (new, or an earlier import of this job: new trials are added)."
    ),
) -> None:
    """Read a Harbor job folder into an agentmill run folder (status, export, report work on it; bad trials reported and skipped)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from agentmill.errors import AgentmillError
    from agentmill.interop.harbor.job_import import import_harbor_job

    columns = (
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("trial folders"),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("import", total=None)
            report = import_harbor_job(
                job_dir, out, progress=lambda done, total: bar.update(task, completed=done, total=total)
            )
    except AgentmillError as e:
        console.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    unfinished = {k: report.job_stats.get(k) or 0 for k in ("n_running_trials", "n_pending_trials")}
    if any(unfinished.values()):  # Harbor is still running the job: importing again later adds the rest
        console.print(
            f"note: the job is not finished ({unfinished['n_running_trials']} trials running, "
            f"{unfinished['n_pending_trials']} pending, by its result.json)",
            highlight=False,
        )
    for line in report.problems:
        console.print(f"[yellow]skipped:[/yellow] {line}", highlight=False)
    console.print(
        f"imported {report.imported} trials into {out}"
        + (f" ({report.already} already there)" if report.already else "")
        + (f"; {len(report.problems)} skipped" if report.problems else ""),
        highlight=False,
    )
    raise typer.Exit(0 if not report.problems else 1)
