"""Commands of tool-use tasks: `agentmill tools serve|export-eog` (`agentmill env`, the old name, still
works, hidden from --help) and `agentmill import eog`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.console import Console

from agentmill.errors import AgentmillError

tools_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Tool-use tasks' gyms: serve one over MCP, export tool tasks."
)
import_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Import tasks (eog) and runs (harbor) from other formats."
)
console = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(2)


@tools_app.command("serve")
def serve(
    target: str = typer.Argument(..., help="A bundled gym's name or a tool-task folder."),
    port: int = typer.Option(
        ..., "--port", "-p", min=1, max=65535, help="Loopback port for MCP (streamable HTTP at /mcp)."
    ),
    db: Path | None = typer.Option(
        None, "--db", help="SQLite file of the first gym: loaded if it exists, kept up to date."
    ),
) -> None:
    """Serve a gym's tools over MCP on 127.0.0.1; every call runs inside a sandbox."""
    from agentmill.tools.mcp_server import serve as run_server

    def ready(task, session) -> None:
        console.print(
            f"serving {len(session.tools)} tools of {', '.join(g.name for g in task.tool_spec.gyms)} "
            f"at http://127.0.0.1:{port}/mcp",
            highlight=False,
        )

    try:
        asyncio.run(run_server(target, port=port, db=db.resolve() if db else None, ready=ready))
    except AgentmillError as e:
        _fail(str(e))
    except KeyboardInterrupt:
        pass


@tools_app.command("export-eog")
def export_eog_cmd(
    dataset: Path = typer.Argument(..., help="A folder of tool-task folders (or one task folder)."),
    out: Path = typer.Option(..., "--out", "-o", help="EnterpriseOps-Gym config rows, JSONL."),
) -> None:
    """Write tool tasks as EnterpriseOps-Gym config rows (the reverse of `import eog`)."""
    from agentmill.tasks.eog import export_eog

    n, errors = export_eog(dataset, out)
    for e in errors:
        console.print(f"[yellow]skipped:[/yellow] {e}", highlight=False)
    console.print(f"wrote {n} rows to {out}", highlight=False)
    raise typer.Exit(0 if not errors else 1)


@import_app.command("eog")
def import_eog_cmd(
    jsonl: Path = typer.Argument(..., exists=True, dir_okay=False, help="EnterpriseOps-Gym config rows, JSONL."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write one tool-task folder per row into."),
) -> None:
    """Read EnterpriseOps-Gym config rows into tool-task folders (bad rows reported and skipped)."""
    from agentmill.tasks.eog import import_eog

    report = import_eog(jsonl, out)
    for e in report.errors:
        console.print(f"[yellow]skipped:[/yellow] {e}", highlight=False)
    console.print(f"wrote {len(report.written)} tasks to {out}", highlight=False)
    raise typer.Exit(0 if not report.errors else 1)
