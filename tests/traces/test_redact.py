"""Secret redaction: env-style credential variables, URL credentials, cut keys; idempotent, so what an
agent stored (already redacted) exports unchanged."""

import pytest

from agentmill.traces.redact import redact, scrub
from agentmill.traces.text import drop_trailing_blank_lines

SECRETS = [
    ("export OPENAI_API_KEY=abcd1234efgh", "export OPENAI_API_KEY=[REDACTED:env_secret]"),
    ('MY_SERVICE_TOKEN="xyzzy-1234"', 'MY_SERVICE_TOKEN="[REDACTED:env_secret]"'),
    ('{"GITHUB_TOKEN": "tok123456"}', '{"GITHUB_TOKEN": "[REDACTED:env_secret]"}'),
    ("DB_PASSWORD: s3cr3t-pw", "DB_PASSWORD: [REDACTED:env_secret]"),
    ("DATABASE_URL=mysql://u:p@h/db", "DATABASE_URL=[REDACTED:env_secret]"),
    ("see postgres://admin:hunter22@db:5432/x", "see postgres://admin:[REDACTED:url_password]@db:5432/x"),
    ("git clone https://bob:ghp_x1y2z3@github.com/a/b", "git clone https://bob:[REDACTED:url_password]@github.com/a/b"),
    (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdefghABCD==\nroot@x:/app# ls",
        "[REDACTED:private_key]\nroot@x:/app# ls",
    ),  # a key whose end was cut off
    (
        "MIIEowIBAAKCAQEA\nabcdefghABCD==\n-----END RSA PRIVATE KEY-----\nls",
        "[REDACTED:private_key]\nls",
    ),  # its head cut off
]
NOT_SECRETS = [
    "PASSWORD=$PW",
    "TOKEN=",
    "API_KEY=<your key>",
    "token=abc",
    "https://github.com/x/y",
    "ssh://git@host/x",
    'printf "%s://admin:%s@db/x"',
    "TOKEN=${SECRET}",
    "max_tokens=4096",
]


@pytest.mark.parametrize("text, redacted", SECRETS)
def test_secrets_are_redacted_once(text, redacted):
    out, n = redact(text)
    assert (out, n) == (redacted, 1)
    assert redact(out) == (out, 0)  # idempotent: a marker is never a secret


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_references_and_placeholders_are_not_secrets(text):
    assert redact(text) == (text, 0)


def test_scrub_cleans_then_redacts():
    assert scrub("k\x00 \ud800 AKIAIOSFODNN7EXAMPLE\x1b[1m!") == ("k \ufffd [REDACTED:aws_access_key]!", 1)


def test_trailing_blank_screen_rows_are_dropped():
    assert drop_trailing_blank_lines("$ ls\na b\n$ \n\n   \n\t\n") == "$ ls\na b\n$ "
    assert drop_trailing_blank_lines("a\n\nb") == "a\n\nb"


@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])
def test_every_kind_of_github_token_is_redacted(prefix):
    # personal, OAuth, user-to-server, server-to-server (Actions' GITHUB_TOKEN) and refresh tokens
    token = prefix + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    out, n = redact(f"remote: using {token} to push")
    assert (out, n) == ("remote: using [REDACTED:github_token] to push", 1)
    assert scrub(f"{token}\n")[0] == "[REDACTED:github_token]\n"


def test_a_github_like_word_that_is_not_a_token_stays():
    assert redact("ghx_" + "a" * 36) == ("ghx_" + "a" * 36, 0)
    assert redact("ghs_short") == ("ghs_short", 0)
