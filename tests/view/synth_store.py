"""A real synthesis store for the viewer's tests: `run_synth` with every role a scripted model on a
real local HTTP server (tests/synth/scripted.py), real sandboxes, one multiply variant per target.
Cases: a weak verifier (caught by the negative gate, repaired), an unparseable first reply, a
missing entity (caught by lint, repaired) and a too-easy task (rejected by the ballot)."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from pathlib import Path

from agentmill.synth.config import load_config
from agentmill.synth.run import run_synth
from tests.synth.scripted import card_line, config_text, role_servers

CASES = ("weak", "garbage", "ghost", "easy")


def make_synth_store(root: Path) -> Path:
    """The output folder of one scripted synth run (synth.sqlite, tasks/, accepted.jsonl)."""
    cards = root / "cards.jsonl"
    cards.write_text("".join(card_line(c) + "\n" for c in CASES))
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        (root / "synth.toml").write_text(config_text(servers, cards, multiply_per_target=1))
        asyncio.run(run_synth(load_config(root / "synth.toml"), root / "out"))
    return root / "out"
