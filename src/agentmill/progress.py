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


class RolloutProgress:
    """Live rollout progress: done/running/failed, mean reward, tokens in/out, requests/s, ETA."""

    def __init__(self, total: int, client=None, console: Console | None = None):
        self.client = client
        self.done = self.running = self.failed = 0
        self.reward_sum, self.rewarded = 0.0, 0
        self.tokens_in = self.tokens_out = 0
        self._progress = Progress(
            TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"), TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
        )
        self._task = self._progress.add_task("trials", total=total, counts="", stats="")

    def __enter__(self) -> "RolloutProgress":
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._refresh()
        self._progress.__exit__(*exc)

    def started(self, _plan=None) -> None:
        self.running += 1
        self._refresh()

    def finished(self, result) -> None:
        self.running -= 1
        self.done += 1
        if result.outcome.value != "passed" and result.outcome.value != "failed":
            self.failed += 1
        if result.reward is not None:
            self.reward_sum += result.reward
            self.rewarded += 1
        self.tokens_in += result.tokens.get("prompt", 0)
        self.tokens_out += result.tokens.get("completion", 0)
        self._progress.update(self._task, advance=1)
        self._refresh()

    def _refresh(self) -> None:
        task = self._progress.tasks[0]
        elapsed = task.elapsed or 0.0
        mean = f"{self.reward_sum / self.rewarded:.3f}" if self.rewarded else "-"
        rps = ""
        if self.client is not None and elapsed > 0:
            rps = f" {self.client.stats.requests / elapsed:.1f} req/s"
        counts = f"[green]{self.done} done[/] [cyan]{self.running} running[/] [red]{self.failed} errors[/]"
        stats = f"reward {mean} tok {self.tokens_in}/{self.tokens_out}{rps}"
        self._progress.update(self._task, counts=counts, stats=stats)
