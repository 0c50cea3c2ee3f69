"""Logging: agentmill's modules log to the `agentmill` logger (a child per module); nothing is printed
unless a program asks. The CLI's `-v` (info) and `-vv` (debug) turn it on, on stderr; users of the
Python API call `logging.getLogger("agentmill").setLevel(...)` with a handler of their own, or
`configure(verbosity)`."""

from __future__ import annotations

import logging
import sys

LOGGER = "agentmill"


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is emitted (a test's capture, a CLI runner's),
    never to a stream that was stderr once and may be closed since."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure(verbosity: int) -> None:
    """0: warnings only (the default, Python's own last-resort output), 1: info, 2 or more: debug, on
    stderr through one handler, added once."""
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG)
    if verbosity > 0 and not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
