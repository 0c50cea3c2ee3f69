"""Progress for long work (rich): done/running/failed, rate, ETA."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class TrialProgress:
    """A progress bar with ok/failed counts. Use as a context manager; call advance() per item."""

    def __init__(self, total: int, what: str = "trials", console: Console | None = None):
        self.ok = self.failed = 0
        self._progress = Progress(
            TextColumn(f"[bold]{what}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("[green]{task.fields[ok]} ok[/] [red]{task.fields[failed]} failed[/]"),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self._task = self._progress.add_task(what, total=total, ok=0, failed=0, rate="")

    def __enter__(self) -> "TrialProgress":
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def advance(self, ok: bool) -> None:
        if ok:
            self.ok += 1
        else:
            self.failed += 1
        task = self._progress.tasks[0]
        elapsed = task.elapsed or 0.0
        done = self.ok + self.failed
        rate = f"{done / elapsed:.2f}/s" if elapsed > 0 else ""
        self._progress.update(self._task, advance=1, ok=self.ok, failed=self.failed, rate=rate)
