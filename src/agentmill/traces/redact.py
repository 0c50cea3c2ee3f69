"""Secret redaction: credentials that leak into terminal output, tool results or model replies never
reach the model's next request, a stored trajectory or a dataset.

Agents scrub (clean, then redact) every text before it is sent and stored, so what is stored is
what was sent; exports redact again (idempotent: a `[REDACTED:kind]` marker is never matched), which
covers trajectories written by older versions or other harnesses.
"""

from __future__ import annotations

import os
import re

from agentmill.traces.text import clean_text, is_clean

_NOT_MARKER = r"(?!\[REDACTED)"
# Environment variables that hold credentials, by exact name or by suffix (MY_SERVICE_API_KEY).
_KEY_NAMES = (
    r"(?:[A-Z0-9_]*_)?(?:API_?KEY|SECRET(?:_ACCESS)?_KEY|SECRET|ACCESS_?TOKEN|AUTH_?TOKEN|TOKEN|PASSWORD|PASSWD"
    r"|PRIVATE_KEY|CLIENT_SECRET|SESSION_TOKEN|CREDENTIALS?)|DATABASE_URL|PGPASSWORD|MYSQL_PWD"
)

_PATTERNS: list[tuple[str, re.Pattern]] = [
    (
        "private_key",
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----", re.DOTALL),
    ),
    # a key cut by a length limit or a pager: its head with the base64 lines that follow, or its tail
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:\r?\n[A-Za-z-]+:[^\n]*)*(?:\r?\n(?=\r?\n))?"
            r"(?:\r?\n[A-Za-z0-9+/=]{8,}(?=\r?\n|\Z))*"
        ),
    ),
    ("private_key", re.compile(r"(?:^[A-Za-z0-9+/=]{8,}\r?\n)*-----END [A-Z0-9 ]*PRIVATE KEY-----", re.MULTILINE)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("aws_secret_key", re.compile(r"(?i)(aws_secret_access_key\s*[=:]\s*)" + _NOT_MARKER + r"[A-Za-z0-9/+]{40}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("hf_token", re.compile(r"\bhf_[A-Za-z]{34}\b")),
    ("stripe_key", re.compile(r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{16,}\b")),
    ("bearer", re.compile(r"(?i)(authorization:\s*bearer\s+)" + _NOT_MARKER + r"[A-Za-z0-9._~+/-]{16,}=*")),
    # NAME=value / NAME: value / "NAME": "value" for credential variables; references ($X, ${X}),
    # empty values and placeholders in angle brackets are not secrets
    (
        "env_secret",
        re.compile(
            r"""(\b(?:"""
            + _KEY_NAMES
            + r""")["']?\s*[=:]\s*["']?)"""
            + _NOT_MARKER
            + r"""(?![$<\s"'])[^\s"'`;&|]{4,}"""
        ),
    ),
    # user:password@host in any URL (not a placeholder: $VAR, %s, {x}, <x>)
    (
        "url_password",
        re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)" + _NOT_MARKER + r"(?![$%{<])[^/\s@]+(?=@)"),
    ),
]


# Fast path. Most text holds no secret, and 15 regex passes over every string dominated exports.
# Each pattern gets groups of literal needles that any match of it must contain (at least one needle
# of every group); a pattern runs only where its needles are present, so the result is exactly that
# of running every pattern in order. Needles are checked on the current text (after the earlier
# patterns' replacements), as the patterns see it. tests/traces/test_redact_fast.py checks the fast
# path against the plain loop (`redact_reference`) on planted secrets in every position.
_NEEDLES: dict[str, tuple[tuple[str, ...], ...]] = {
    "private_key": (("PRIVATE KEY-----",),),
    "jwt": (("eyJ",),),
    "aws_access_key": (("AKIA", "ASIA"),),
    "aws_secret_key": (("aws_secret_access_key",),),  # case-insensitive pattern: checked on lowered text
    "github_token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),),
    "openai_key": (("sk-",),),
    "slack_token": (("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"),),
    "google_api_key": (("AIza",),),
    "hf_token": (("hf_",),),
    "stripe_key": (("k_live_", "k_test_"),),
    "bearer": (("authorization",), ("bearer",)),  # case-insensitive pattern: checked on lowered text
    "env_secret": (("KEY", "SECRET", "TOKEN", "PASSW", "CREDENTIAL", "DATABASE_URL", "MYSQL_PWD"), ("=", ":")),
    "url_password": (("://",), ("@",)),
}
# Non-ASCII characters that a case-insensitive pattern matches to an ASCII letter although their
# str.lower() does not contain that letter (Python's re folds them: i, s, k). Text holding one of
# them runs the case-insensitive patterns without a needle check.
_FOLD_TRAPS = ("\u0130", "\u0131", "\u017f", "\u212a")


_RULES = [(kind, pattern, bool(pattern.flags & re.IGNORECASE), _NEEDLES[kind]) for kind, pattern in _PATTERNS]


def _needles_of(folded: bool) -> tuple[str, ...]:
    """One needle of each pattern's first group: a text holding none of them matches no pattern.
    A needle that contains another one (PRIVATE KEY----- holds KEY) is left out."""
    first = {n for _, _, f, needles in _RULES if f == folded for n in needles[0]}
    return tuple(sorted(n for n in first if not any(m != n and m in n for m in first)))


# Characters by how often they occur in terminal output and prose, most common first. A needle is
# looked for only where its anchor occurs: its rarest character when that is rare (a one-character
# search, memchr, is some thirty times faster than a substring search, and a rare character is
# mostly absent), else the prefix it shares with other needles (one search for the family: gh, xox).
# Speed only: any part of the needle as its anchor would be exact.
_COMMON = " \netaoinsrhldcumfpgwybv.-_/:=,0123456789k\"'x#@|()[]{}ITASCEONRLPDMHBFGUWYKVjqzJXQZ"
_RARE_FROM = _COMMON.index("I")  # upper-case letters and the rarest lower-case ones


def _anchored(needles: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(anchor, needle) for each needle."""
    rank = {c: i for i, c in enumerate(_COMMON)}

    def anchor(n: str) -> str:
        rarest = max(n, key=lambda c: rank.get(c, len(_COMMON)))
        if rank.get(rarest, len(_COMMON)) >= _RARE_FROM:
            return rarest
        shared = [os.path.commonprefix([n, m]) for m in needles if m != n]
        return max(shared, key=len) if shared and len(max(shared, key=len)) >= 2 else n

    return tuple((anchor(n), n) for n in needles)


_GATE, _GATE_FOLDED = _anchored(_needles_of(False)), _anchored(_needles_of(True))


def _holds(text: str, gate: tuple[tuple[str, str], ...]) -> bool:
    """Whether `text` holds a needle of `gate` (each anchor searched once)."""
    anchors: dict[str, bool] = {}
    for anchor, needle in gate:
        found = anchors.get(anchor)
        if found is None:
            found = anchors[anchor] = anchor in text
        if found and (anchor == needle or needle in text):
            return True
    return False


def _folded(text: str) -> str | None:
    """Text to look for a case-insensitive pattern's needles in; None when only the regex can tell."""
    if not text.isascii() and any(c in text for c in _FOLD_TRAPS):
        return None
    return text.lower()


def _maybe_secret(text: str) -> bool:
    if _holds(text, _GATE):
        return True
    low = _folded(text)
    return low is None or _holds(low, _GATE_FOLDED)


def scrubbed_as_is(texts: list[str]) -> bool:
    """True when `scrub` returns every one of `texts` unchanged with nothing redacted, and so any text
    made by joining some of them with newlines: one pass over their join instead of one per text.
    Clean text joined by newlines is clean; no needle holds a newline, so a needle in such a join lies
    inside one of the texts; lowering goes character by character but for U+0130 (a fold trap) and the
    choice of final sigma (not ASCII), so a needle in a lowered text is one in the lowered join."""
    joined = "\n".join(texts)
    return is_clean(joined) and not _maybe_secret(joined)


def _may_match(text: str, folded: bool, needles: tuple[tuple[str, ...], ...]) -> bool:
    if folded:
        low = _folded(text)
        if low is None:
            return True
        text = low
    return all(any(n in text for n in group) for group in needles)


def _substitute(kind: str, pattern: re.Pattern, text: str) -> tuple[str, int]:
    if pattern.groups:
        return pattern.subn(lambda m: f"{m.group(1)}[REDACTED:{kind}]", text)
    return pattern.subn(f"[REDACTED:{kind}]", text)


def redact(text: str) -> tuple[str, int]:
    """(text with secrets replaced by [REDACTED:kind], number replaced)."""
    if not _maybe_secret(text):
        return text, 0
    total = 0
    for kind, pattern, folded, needles in _RULES:
        if _may_match(text, folded, needles):
            text, n = _substitute(kind, pattern, text)
            total += n
    return text, total


def redact_reference(text: str) -> tuple[str, int]:
    """Every pattern in order, no needle checks: what `redact` must equal (the tests compare them)."""
    total = 0
    for kind, pattern in _PATTERNS:
        text, n = _substitute(kind, pattern, text)
        total += n
    return text, total


def scrub(text: str | None) -> tuple[str, int]:
    """What may be sent to a model and stored: clean text (see text.clean_text) with secrets redacted.
    Returns (text, secrets redacted)."""
    return redact(clean_text(text))
