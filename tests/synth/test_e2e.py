"""End to end: `run_synth` with every role a scripted model on a real local HTTP server, real sandboxes,
real rollouts. Planted bad candidates are each caught by the gate that exists for them, repaired or
rejected, and the funnel shows it."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack

import pytest

from agentmill.synth.config import load_config
from agentmill.synth.run import run_synth
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.synth.scripted import CASES, card_line, config_text, role_servers

pytestmark = sandbox


def _run(tmp_path, cases, **synth):
    cards = tmp_path / "cards.jsonl"
    cards.write_text("".join(card_line(c) + "\n" for c in cases))
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        (tmp_path / "synth.toml").write_text(config_text(servers, cards, **synth))
        config = load_config(tmp_path / "synth.toml")
        summary = asyncio.run(run_synth(config, tmp_path / "out"))
    return summary, servers


def test_good_candidate_is_accepted(tmp_path):
    summary, servers = _run(tmp_path, ["good"])
    assert summary["accepted"] == 1
    print(summary)
