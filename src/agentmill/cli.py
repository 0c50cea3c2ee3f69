"""The `agentmill` command line: one verb per stage."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from agentmill import __version__
from agentmill.errors import AgentmillError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Verified, reproducible training data for agent models.")
sandbox_app = typer.Typer(no_args_is_help=True, help="Run commands in the embedded sandbox.")
app.add_typer(sandbox_app, name="sandbox")
console = Console(stderr=True, soft_wrap=True)  # one error, one line: never wrapped
out = Console()


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


def _load(dataset: Optional[Path], sample: bool, names: list[str] | None):
    from agentmill.tasks import load_dataset, sample_dataset_path

    if sample == (dataset is not None):
        _fail("give a DATASET folder or --sample (one of them)")
    try:
        ds = load_dataset(sample_dataset_path() if sample else dataset, names=names or None)
    except AgentmillError as e:
        _fail(str(e))
    for err in ds.errors:
        console.print(f"[yellow]skipped:[/yellow] {err}", highlight=False)
    for w in ds.warnings:
        console.print(f"[dim]warning: {w}[/dim]", highlight=False)
    if not ds.tasks:
        _fail(f"no loadable tasks in {ds.root}")
    return ds


@app.command()
def version() -> None:
    """Print the agentmill version."""
    out.print(__version__)


@app.command()
def check(
    dataset: Optional[Path] = typer.Argument(None, help="A folder of task folders (or one task folder)."),
    sample: bool = typer.Option(False, "--sample", help="Check the bundled sample tasks."),
    task: list[str] = typer.Option([], "--task", "-t", help="Only these task names (repeatable)."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", min=1, help="Trials run at once."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write per-task results as JSON here."),
) -> None:
    """Oracle must reach reward 1 and nop must not, for every task."""
    from agentmill.progress import TrialProgress
    from agentmill.verify.check import check_tasks

    ds = _load(dataset, sample, task)
    with TrialProgress(total=len(ds.tasks), what="tasks", console=console) as progress:
        results = asyncio.run(check_tasks(ds.tasks, concurrency=concurrency,
                                          on_done=lambda r: progress.advance(ok=r.verdict == "ok")))
    table = Table(title=f"agentmill check: {ds.root}")
    for col in ("task", "oracle", "nop", "verdict", "reason"):
        table.add_column(col, overflow="fold")
    for r in sorted(results, key=lambda r: r.task.name):
        def cell(t):
            return "-" if t is None else f"{t.reward if t.reward is not None else '-'} ({t.outcome.value})"
        color = "green" if r.verdict == "ok" else "red"
        table.add_row(r.task.name, cell(r.oracle), cell(r.nop), f"[{color}]{r.verdict}[/{color}]",
                      "" if r.verdict == "ok" else r.reason[:200])
    out.print(table)
    ok = sum(r.verdict == "ok" for r in results)
    out.print(f"{ok}/{len(results)} tasks ok; {len(ds.errors)} broken task folders skipped")
    if json_path:
        _write_json(json_path, [r.to_json() for r in results])
    raise typer.Exit(0 if ok == len(results) and not ds.errors else 1)


@app.command()
def toolkit() -> None:
    """Build (once) the offline verifier toolkit: pytest, uv/uvx/curl/apt-get shims for test scripts."""
    from agentmill.verify.toolkit import ensure_toolkit

    path = ensure_toolkit(build=True)
    if path is None:
        _fail("could not build the verifier toolkit (pip install of pytest failed: is the package registry reachable?)", 1)
    out.print(str(path))


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


@sandbox_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def sandbox_run(
    ctx: typer.Context,
    workspace: Optional[Path] = typer.Option(None, "--workspace", "-w", help="Host folder mounted writable at the same path; the command runs there."),
    timeout: float = typer.Option(60.0, "--timeout", help="Wall-clock limit in seconds."),
    memory_mb: int = typer.Option(2048, "--memory-mb", help="Memory limit."),
) -> None:
    """Run one command in the default sandbox; print its output and exit code: `agentmill sandbox run -- CMD...`"""
    from agentmill.sandbox.oneshot import run_once

    command = list(ctx.args)
    if not command:
        _fail("give the command after --, e.g. agentmill sandbox run -- ls /")
    try:
        result = asyncio.run(run_once(command, workspace=workspace, timeout=timeout, memory_mb=memory_mb))
    except AgentmillError as e:
        _fail(str(e))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    note = " (timed out)" if result.timed_out else ""
    console.print(f"exit code: {result.returncode}{note}", highlight=False)
    raise typer.Exit(124 if result.timed_out else (result.returncode if result.returncode >= 0 else 128 - result.returncode))


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
