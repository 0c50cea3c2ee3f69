"""The end-of-run outage summary: infrastructure failures grouped by endpoint, most common cause first.

A trial or box that ended for the endpoint's sake carries the client's error text, which starts with
the endpoint's URL ("http://host/v1: ConnectionError (after 7 attempts)"). A thousand such lines
say one thing: "http://host/v1: 1000 x ConnectionError". Attempt counts are left out of the cause so
the same failure groups as one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_URL = re.compile(r"(https?://[^\s:]+(?::\d+)?[^\s:]*)\s*:\s*")
_ATTEMPTS = re.compile(r"\s*\(after \d+ attempts?\)")
_NUMBERS = re.compile(r"\b\d{5,}\b|cmpl-\S+")  # ids in server messages would split one cause into many


def endpoint_and_cause(error: str | None) -> tuple[str, str]:
    """("http://host/v1", "ConnectionError") from a failure's text; ("-", text) when no URL is named."""
    text = (error or "unknown failure").strip().splitlines()[0] if (error or "").strip() else "unknown failure"
    m = _URL.search(text)
    endpoint = m.group(1).rstrip("/") if m else "-"
    cause = text[m.end() :] if m else text
    cause = _NUMBERS.sub("N", _ATTEMPTS.sub("", cause)).strip()
    return endpoint, cause[:160] or "unknown failure"


def outage_lines(errors: Iterable[str | None]) -> list[str]:
    """One line per endpoint: how many failures, and the most common cause with its count."""
    by_endpoint: dict[str, Counter] = {}
    for error in errors:
        endpoint, cause = endpoint_and_cause(error)
        by_endpoint.setdefault(endpoint, Counter())[cause] += 1
    lines = []
    for endpoint, causes in sorted(by_endpoint.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(causes.values())
        (top, n), others = causes.most_common(1)[0], len(causes) - 1
        where = "no endpoint named" if endpoint == "-" else endpoint
        lines.append(
            f"{where}: {total} failed; most common: {top} ({n})"
            + (f", and {others} other cause{'s' * (others > 1)}" if others else "")
        )
    return lines
