"""`agentmill view`: index the run (with progress), serve it on loopback until interrupted."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from agentmill.errors import AgentmillError
from agentmill.view import ViewServer, open_source


def run_view(path: Path, port: int, filters: Path | None, console: Console) -> None:
    with Progress(
        TextColumn("[bold]indexing trials"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("index", total=None)
        source = open_source(
            path, filters=filters, progress=lambda done, total: bar.update(task, completed=done, total=total)
        )
    try:
        server = ViewServer(source, port)
    except OSError as e:
        source.close()
        raise AgentmillError(f"cannot listen on 127.0.0.1:{port}: {e.strerror}") from None
    print(f"agentmill view: {server.url}  (loopback only; Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        source.close()
