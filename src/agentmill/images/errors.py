"""What an image build can fail with, shared by both builders."""

from __future__ import annotations

import re

from agentmill.errors import AgentmillError, NeedsContainerError

# What a failed fetch prints. Here an unreachable host and a DNS hiccup read the same, so a step
# that fails this way is retried, and the final verdict is never cached on disk.
NETWORK_ERRORS = (
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Temporary failure resolving",
    "Failed to connect",
    "Network is unreachable",
    "Connection timed out",
    "Connection reset by peer",
    "Read timed out",
    "Failed to establish a new connection",
    "503 Service Unavailable",
    "502 Bad Gateway",
    "504 Gateway Time-out",
    "Could not connect to",
    "Failed to fetch",
)
RETRY_DELAYS = (2.0, 8.0)  # seconds before the 2nd and 3rd attempt of a step that failed on the network


class TransientNeedsContainer(NeedsContainerError):
    """A verdict that may change on the next run: kept for this process only, never cached on disk."""


class NetworkFetchError(TransientNeedsContainer):
    """A RUN step's network fetch failed on every attempt; the next run tries again."""


class ImageBuildError(AgentmillError):
    """A build step failed. `log` keeps the failing step's output."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(message)


def last_words(output: str) -> str:
    """A failed step's last line that says something: curl's progress meter (digits, `--:--:--`) in
    front of its error, and lines of it alone, are dropped."""
    for line in reversed(output.strip().splitlines()):
        line = re.sub(r"^[\s\d.:kMG%-]+(?=[A-Za-z]{2})", "", line).strip()
        if re.search(r"[A-Za-z]{2}", line):
            return line
    return ""
