"""The redaction fast path (needle checks before each pattern) must give exactly what running every
pattern in order gives: every secret class, planted at the start, middle and end of text, next to
other secrets, in other letter cases, beside non-ASCII characters that regex case folding treats
as ASCII letters; and a random mix of all of these."""

import random
import re

import pytest

from agentmill.traces import redact as redact_mod
from agentmill.traces.redact import _FOLD_TRAPS, _NEEDLES, _PATTERNS, redact, redact_reference, scrubbed_as_is

# (kind, a secret of that kind as it appears in text, the secret value that must disappear)
SAMPLES = [
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDREVGR0g=\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdefghABCD==\n", "MIIEowIBAAKCAQEA"),
    ("private_key", "MIIEowIBAAKCAQEA\nabcdefghABCD==\n-----END RSA PRIVATE KEY-----", "abcdefghABCD=="),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key", "ASIAIOSFODNN7EXAMPL2", "ASIAIOSFODNN7EXAMPL2"),
    ("aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
    ("aws_secret_key", "Aws_Secret_Access_Key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
    ("github_token", "ghp_" + "a1B2c3D4e5" * 4, "a1B2c3D4e5a1B2c3"),
    ("github_token", "github_pat_" + "Z9y8X7w6V5_" * 4, "Z9y8X7w6V5_Z9y8X7w6V5"),
    ("openai_key", "sk-proj-abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz"),
    ("slack_token", "xoxb-1234567890-abcdefABCDEF", "1234567890-abcdef"),
    ("google_api_key", "AIza" + "SyD-abc_123" * 3 + "XY", "SyD-abc_123SyD"),
    ("hf_token", "hf_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH", "abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ("stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe_key", "rk_test_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("bearer", "Authorization: Bearer abcDEF123456ghiJKL.789", "abcDEF123456ghiJKL"),
    ("bearer", "AUTHORIZATION:bearer   abcDEF123456ghiJKL.789==", "abcDEF123456ghiJKL"),
    ("env_secret", "export OPENAI_API_KEY=abcd1234efgh", "abcd1234efgh"),
    ("env_secret", '{"GITHUB_TOKEN": "tok123456"}', "tok123456"),
    ("env_secret", "DB_PASSWORD: s3cr3t-pw", "s3cr3t-pw"),
    ("env_secret", "PGPASSWORD=hunter2hunter2", "hunter2hunter2"),
    ("env_secret", "MYSQL_PWD=hunter3hunter3", "hunter3hunter3"),
    ("env_secret", "MY_CREDENTIALS='c0rrect-h0rse'", "c0rrect-h0rse"),
    ("env_secret", "DATABASE_URL=mysql://u:p@h/db", "mysql://u:p@h/db"),
    ("url_password", "see postgres://admin:hunter22@db:5432/x", "hunter22"),
]
NOISE = [
    "",
    " ",
    "\n",
    "root@box:/app# ",
    "ls -la\n",
    "total 12\ndrwxr-xr-x 2 root root 4096 .\n",
    "é ü 日本 ",
    "a KEY here",
    "://",
    "@",
    "=",
    ":",
    "eyJ",
    "sk-",
    "hf_",
    "AKIA",
    "PRIVATE KEY-----",
    "authorization",
    "Bearer",
    "[REDACTED:env_secret]",
    '"',
    "'",
    "$TOKEN",
    *_FOLD_TRAPS,
]
CASES = [(kind, secret, value) for kind, secret, value in SAMPLES]


@pytest.mark.parametrize("kind, secret, value", CASES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CASES)])
@pytest.mark.parametrize("where", ["alone", "start", "middle", "end", "between_secrets"])
def test_planted_secret_is_redacted_in_every_position(kind, secret, value, where):
    before, after = {
        "alone": ("", ""),
        "start": ("", "\nroot@box:/app# ls\n"),
        "middle": ("$ cat env\nnoise line\n", "\nmore output\n"),
        "end": ("$ cat creds\n", ""),
        "between_secrets": ("AKIAIOSFODNN7EXAMPLE\n", "\nexport API_TOKEN=zzzz9999"),
    }[where]
    text = before + secret + after
    out, n = redact(text)
    assert (out, n) == redact_reference(text)
    assert value not in out and f"[REDACTED:{kind}]" in out and n >= 1


@pytest.mark.parametrize("trap", _FOLD_TRAPS)
def test_case_folded_letters_do_not_hide_a_secret(trap):
    # Python's re matches these non-ASCII letters to i/s/k under IGNORECASE; lowering does not show it
    text = {
        "\u0130": "AUTHOR\u0130ZATION: Bearer abcDEF123456ghiJKL",
        "\u0131": "author\u0131zation: bearer abcDEF123456ghiJKL",
        "\u017f": "aws_\u017fecret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "\u212a": "aws_secret_access_\u212aey=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }[trap]
    out, n = redact(text)
    assert n == 1 and (out, n) == redact_reference(text)


def test_fold_traps_cover_every_non_ascii_letter_that_regex_folds_to_ascii():
    folds_to_ascii = re.compile(r"(?i)[a-z]")
    for cp in range(128, 0x110000):
        c = chr(cp)
        if folds_to_ascii.fullmatch(c):
            letter = next(x for x in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(f"(?i){x}", c))
            assert c in _FOLD_TRAPS or c.lower() == letter, f"U+{cp:04X} folds to {letter!r}"


def test_every_pattern_has_needles():
    assert {kind for kind, _ in _PATTERNS} == set(_NEEDLES)


def _random_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 8)):
        piece = rng.choice(SAMPLES)[1] if rng.random() < 0.4 else rng.choice(NOISE)
        r = rng.random()
        piece = piece.upper() if r < 0.1 else piece.lower() if r < 0.2 else piece
        parts.append(piece)
    return rng.choice(["", " ", "\n", "=", ":"]).join(parts)


def test_fast_path_equals_every_pattern_in_order_on_random_mixes():
    rng = random.Random(1234)
    for _ in range(4000):
        text = _random_text(rng)
        assert redact(text) == redact_reference(text), text


def test_a_wrong_needle_is_caught(monkeypatch):
    # the gate above can fail: a needle that a jwt does not contain hides jwts from the fast path
    monkeypatch.setattr(
        redact_mod, "_RULES", [(k, p, f, (("eyX",),) if k == "jwt" else n) for k, p, f, n in redact_mod._RULES]
    )
    text = next(secret for kind, secret, _ in SAMPLES if kind == "jwt")
    assert redact(text) != redact_reference(text)


def test_a_gate_without_a_patterns_needle_is_caught(monkeypatch):
    # the first check (any needle at all) must hold one needle of every pattern
    monkeypatch.setattr(redact_mod, "_GATE", tuple(g for g in redact_mod._GATE if g[1] != "eyJ"))
    text = next(secret for kind, secret, _ in SAMPLES if kind == "jwt")
    assert redact(text) == (text, 0) != redact_reference(text)


def test_every_anchor_is_part_of_its_needle():
    for anchor, needle in redact_mod._GATE + redact_mod._GATE_FOLDED:
        assert anchor and anchor in needle
    # speed: a rare character (one memchr) where the needle has one, else a family's shared prefix
    anchors = {n: a for a, n in redact_mod._GATE}
    assert anchors["eyJ"] == "J" and anchors["KEY"] == "K" and anchors["xoxb-"] == "xox" and anchors["ghp_"] == "gh"


def test_a_family_anchor_found_once_still_checks_each_needle():
    # "gh" is present (and remembered) for every gh*_ needle; each needle is still looked for
    text = "high ghz ghp_" + "a1B2c3D4e5" * 4
    assert redact_mod._maybe_secret(text) and not redact_mod._maybe_secret("high ghz gh_ gho")
    assert redact(text) == redact_reference(text) and redact(text)[1] == 1


def test_an_anchor_outside_its_needle_is_caught(monkeypatch):
    # a needle is looked for only where its anchor occurs: an anchor the needle lacks hides the needle
    monkeypatch.setattr(redact_mod, "_GATE", tuple(("#", n) if n == "eyJ" else (a, n) for a, n in redact_mod._GATE))
    text = next(secret for kind, secret, _ in SAMPLES if kind == "jwt")
    assert redact(text) == (text, 0) != redact_reference(text)


def test_without_the_fold_traps_a_folded_secret_would_slip_through(monkeypatch):
    # the trap list is what keeps the case-insensitive needle check exact on non-ASCII text
    monkeypatch.setattr(redact_mod, "_FOLD_TRAPS", ())
    text = "AUTHOR\u0130ZATION: Bearer abcDEF123456ghiJKL"
    assert redact(text) == (text, 0) != redact_reference(text)


def test_scrubbed_as_is_is_true_only_when_every_text_is_clean_and_holds_no_secret():
    assert scrubbed_as_is(["plain words", "ls -la\ntotal 0", ""])
    assert not scrubbed_as_is(["plain words", "id AKIAIOSFODNN7EXAMPLE"])  # one secret among clean texts
    assert not scrubbed_as_is(["plain words", "colour \x1b[31mred\x1b[0m"])  # one text that cleaning changes
    assert not scrubbed_as_is(["AKIAIOSFODNN7EXAMPLE"])
