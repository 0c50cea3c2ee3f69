"""SIGTERM handled as Ctrl-C is.

Slurm, Kubernetes and systemd send SIGTERM before they kill a job. Python's default is to die at
once, mid-write and without a word; Ctrl-C instead cancels the running work (asyncio.run turns
SIGINT into a cancellation of its main task), lets writes in flight finish, and the command says
what finished and how to resume. So SIGTERM raises SIGINT, and the command's exit code says which
signal it was (130 or 143).

A job started in the background of a non-interactive shell (`agentmill ... &` in a batch script)
inherits SIGINT ignored, and Python and asyncio then install no SIGINT handler: raising SIGINT
would do nothing and the job would ignore SIGTERM too. There, SIGTERM raises KeyboardInterrupt
itself, which ends the work the same way (asyncio cancels what is left as it closes the loop).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from agentmill.exit_codes import INTERRUPTED, TERMINATED


@dataclass
class Stop:
    terminated: bool = False

    @property
    def exit_code(self) -> int:
        return TERMINATED if self.terminated else INTERRUPTED

    @property
    def how(self) -> str:
        return "terminated (SIGTERM)" if self.terminated else "interrupted"


@contextmanager
def sigterm_as_interrupt() -> Iterator[Stop]:
    stop = Stop()

    def on_term(_signum, _frame) -> None:
        stop.terminated = True
        if callable(signal.getsignal(signal.SIGINT)):
            signal.raise_signal(signal.SIGINT)  # the SIGINT handler in force (asyncio's, or KeyboardInterrupt)
        else:  # SIGINT ignored (a background job of a batch script): nothing would hear it
            raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread: leave signals alone
        yield stop
        return
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)
