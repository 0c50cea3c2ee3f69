"""Progress for long work (rich): done/running/failed, rate, ETA.

On a terminal a live bar; otherwise (nohup, Slurm logs, pipes) plain lines every few seconds
(`AGENTMILL_PROGRESS_INTERVAL`, default 30 s), so logs show the run moving.
"""

from __future__ import annotations

import os
import threading
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from agentmill import defaults


class _Shown:
    """A rich bar on a terminal, or a plain line every few seconds (`_Ticker`) when not on one."""

    _progress: Progress
    _ticker: _Ticker | None

    def __enter__(self):
        self._started = time.monotonic()
        self._progress.__enter__()
        if self._ticker:
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._ticker:
            self._ticker.stop()
        self._progress.__exit__(*exc)


class TrialProgress(_Shown):
    """A progress bar with ok/failed counts. Use as a context manager; call advance() per item.
    Not on a terminal: plain lines every `AGENTMILL_PROGRESS_INTERVAL` seconds instead."""

    def __init__(self, total: int, what: str = "trials", console: Console | None = None, interval: float | None = None):
        self.ok = self.failed = 0
        self.total, self.what = total, what
        self.console = console or Console(stderr=True)
        self._plain = not self.console.is_terminal
        self._ticker = _Ticker(self.console, self.line, interval) if self._plain else None
        self._started = time.monotonic()
        self._progress = Progress(
            TextColumn(f"[bold]{what}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[green]{task.fields[ok]} ok[/] [red]{task.fields[failed]} failed[/]"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
            disable=self._plain,
        )
        self._task = self._progress.add_task(what, total=total, ok=0, failed=0, rate="")

    def advance(self, ok: bool) -> None:
        if ok:
            self.ok += 1
        else:
            self.failed += 1
        elapsed = time.monotonic() - self._started
        done = self.ok + self.failed
        rate = f"{done / elapsed:.2f}/s" if elapsed > 0 else ""
        self._progress.update(self._task, advance=1, ok=self.ok, failed=self.failed, rate=rate)

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        return (
            f"progress: {self.ok + self.failed}/{self.total} {self.what} done, {self.ok} ok, {self.failed} failed; "
            f"{elapsed:.0f}s elapsed"
        )


class _Ticker:
    """Prints `line()` every interval seconds on a background thread, and once more at the end."""

    def __init__(self, console: Console, line, interval: float | None):
        self.console, self.line = console, line
        self.interval = interval if interval is not None else progress_interval()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-lines", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.console.print(self.line(), highlight=False)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.console.print(self.line(), highlight=False)


class _Live(ProgressColumn):
    """A column computed at every refresh, so figures that move per model request show as they move."""

    def __init__(self, render):
        super().__init__()
        self._render = render

    def render(self, task) -> Text:
        return Text.from_markup(self._render())


def progress_interval() -> float:
    try:
        return max(0.1, float(os.environ.get("AGENTMILL_PROGRESS_INTERVAL", defaults.PROGRESS_INTERVAL)))
    except ValueError:
        return defaults.PROGRESS_INTERVAL


class RolloutProgress(_Shown):
    """Live rollout progress: done/running/failed, mean reward, tokens in/out, requests/s, ETA.

    Tokens and requests are read from the model client at every refresh (per request), not only
    when a trial finishes. Without a client they come from finished trials.
    """

    def __init__(self, total: int, client=None, console: Console | None = None, interval: float | None = None):
        self.client = client
        self.total = total
        self.console = console or Console(stderr=True)
        self.done = self.running = 0
        self.failed = self.errors = 0  # the agent's own failures; the machinery's, the task's or its verifier's
        self.reward_sum, self.rewarded = 0.0, 0
        self._tokens_in = self._tokens_out = 0
        self._started = time.monotonic()
        self._plain = not self.console.is_terminal
        self._ticker = _Ticker(self.console, self.line, interval) if self._plain else None
        self._progress = Progress(
            TextColumn("[bold]trials"),
            BarColumn(),
            MofNCompleteColumn(),
            _Live(self._counts),
            _Live(self._stats),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            disable=self._plain,
        )
        self._task = self._progress.add_task("trials", total=total)

    def set_total(self, total: int) -> None:
        """The trials this invocation will run (known once finished ones are skipped)."""
        self.total = total
        self._progress.update(self._task, total=total)

    def started(self, _plan=None) -> None:
        self.running += 1
        self._progress.refresh()

    def finished(self, result) -> None:
        self.running -= 1
        self.done += 1
        self.failed += result.outcome.is_agents_failure
        self.errors += result.outcome.is_error
        if result.reward is not None:
            self.reward_sum += result.reward
            self.rewarded += 1
        self._tokens_in += result.tokens.get("prompt", 0)
        self._tokens_out += result.tokens.get("completion", 0)
        self._progress.update(self._task, advance=1)

    # -- figures ------------------------------------------------------------------------------

    @property
    def tokens(self) -> tuple[int, int]:
        if self.client is not None:
            usage = self.client.stats.usage
            return usage.prompt_tokens, usage.completion_tokens
        return self._tokens_in, self._tokens_out

    def requests_per_second(self) -> float | None:
        elapsed = time.monotonic() - self._started
        if self.client is None or elapsed <= 0:
            return None
        return self.client.stats.requests / elapsed

    def _counts(self) -> str:
        return (
            f"[green]{self.done} done[/] [cyan]{self.running} running[/] "
            f"[yellow]{self.failed} failed[/] [red]{self.errors} errors[/]"
        )

    def _stats(self) -> str:
        mean = f"{self.reward_sum / self.rewarded:.3f}" if self.rewarded else "-"
        tin, tout = self.tokens
        rps = self.requests_per_second()
        return f"reward {mean} tok {tin}/{tout}" + (f" {rps:.1f} req/s" if rps is not None else "")

    def line(self) -> str:
        """One plain progress line, for logs."""
        elapsed = time.monotonic() - self._started
        tin, tout = self.tokens
        rps = self.requests_per_second()
        mean = f"{self.reward_sum / self.rewarded:.3f}" if self.rewarded else "-"
        eta = ""
        if self.done and self.total > self.done:
            eta = f", eta {elapsed / self.done * (self.total - self.done):.0f}s"
        return (
            f"progress: {self.done}/{self.total} trials done, {self.running} running, "
            f"{self.failed} failed, {self.errors} errors; "
            f"reward {mean}; tokens {tin} in / {tout} out"
            + (f"; {rps:.2f} req/s" if rps is not None else "")
            + f"; {elapsed:.0f}s elapsed{eta}"
        )
