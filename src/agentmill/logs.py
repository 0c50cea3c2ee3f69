"""Logging: agentmill's modules log to the `agentmill` logger (a child per module); nothing is printed
unless a program asks. The CLI's `-v` (info) and `-vv` (debug) turn it on, on stderr; users of the
Python API call `logging.getLogger("agentmill").setLevel(...)` with a handler of their own, or
`configure(verbosity)`."""

from __future__ import annotations

import logging
import sys

LOGGER = "agentmill"


def configure(verbosity: int) -> None:
    """0: warnings only (the default), 1: info, 2 or more: debug; one stderr handler, set once."""
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG)
    if not any(getattr(h, "_agentmill", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
        handler._agentmill = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
