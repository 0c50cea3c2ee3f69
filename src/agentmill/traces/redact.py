"""Secret redaction: credentials that leak into terminal output, tool results or model replies never
reach the model's next request, a stored trajectory or a dataset.

Agents scrub (clean, then redact) every text before it is sent and stored, so what is stored is
what was sent; exports redact again (idempotent: a `[REDACTED:kind]` marker is never matched), which
covers trajectories written by older versions or other harnesses.
"""

from __future__ import annotations

import re

from agentmill.traces.text import clean_text

_NOT_MARKER = r"(?!\[REDACTED)"
# Environment variables that hold credentials, by exact name or by suffix (MY_SERVICE_API_KEY).
_KEY_NAMES = (r"(?:[A-Z0-9_]*_)?(?:API_?KEY|SECRET(?:_ACCESS)?_KEY|SECRET|ACCESS_?TOKEN|AUTH_?TOKEN|TOKEN|PASSWORD|PASSWD"
              r"|PRIVATE_KEY|CLIENT_SECRET|SESSION_TOKEN|CREDENTIALS?)|DATABASE_URL|PGPASSWORD|MYSQL_PWD")

_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----", re.DOTALL)),
    # a key cut by a length limit or a pager: its head with the base64 lines that follow, or its tail
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:\r?\n[A-Za-z-]+:[^\n]*)*(?:\r?\n(?=\r?\n))?"
                               r"(?:\r?\n[A-Za-z0-9+/=]{8,}(?=\r?\n|\Z))*")),
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
    ("env_secret", re.compile(r"""(\b(?:""" + _KEY_NAMES + r""")["']?\s*[=:]\s*["']?)""" + _NOT_MARKER
                              + r"""(?![$<\s"'])[^\s"'`;&|]{4,}""")),
    # user:password@host in any URL (not a placeholder: $VAR, %s, {x}, <x>)
    ("url_password", re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)" + _NOT_MARKER + r"(?![$%{<])[^/\s@]+(?=@)")),
]


def redact(text: str) -> tuple[str, int]:
    """(text with secrets replaced by [REDACTED:kind], number replaced)."""
    total = 0
    for kind, pattern in _PATTERNS:
        if pattern.groups:
            text, n = pattern.subn(lambda m, k=kind: f"{m.group(1)}[REDACTED:{k}]", text)
        else:
            text, n = pattern.subn(f"[REDACTED:{kind}]", text)
        total += n
    return text, total


def scrub(text: str | None) -> tuple[str, int]:
    """What may be sent to a model and stored: clean text (see text.clean_text) with secrets redacted.
    Returns (text, secrets redacted)."""
    return redact(clean_text(text))
