"""`agentmill synth run` killed with SIGKILL mid-run resumes without duplicate acceptances, lineage intact;
multiply variants are only ever seeded by accepted target samples."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from agentmill.synth.candidate import Candidate
from agentmill.synth.card import CapabilityCard
from agentmill.synth.store import LineageError, SynthStore
from tests.conftest import sandbox
from tests.synth.scripted import FINAL, card_line, config_text, role_servers

AGENTMILL = Path(sys.executable).parent / "agentmill"


def _accepted(out: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{out / 'synth.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return db.execute("SELECT COUNT(*) FROM acceptances").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


@sandbox
def test_sigkill_mid_run_resumes_without_duplicates(tmp_path):
    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n" + card_line("garbage") + "\n")
    out = tmp_path / "out"
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers().items() if r not in ("target", "solver")}
        cfg = config_text(servers, cards, multiply_per_target=1, meta_review_every=2).replace(
            "[ballot]", "[ballot]\nenabled = false"
        )
        (tmp_path / "synth.toml").write_text(cfg)
        cmd = [str(AGENTMILL), "synth", "run", str(tmp_path / "synth.toml"), "--out", str(out), "--no-report"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 120
        while _accepted(out) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: nothing of the first run survives
        proc.wait()
        killed_at = _accepted(out)
        assert 1 <= killed_at < 4
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]

    store = SynthStore.open_existing(out)
    acc = store.rows("SELECT candidate_id, card_id, kind, parent_id FROM acceptances")
    # each card reached its target once, each target sample got its one variant: nothing twice
    assert sorted((a["card_id"], a["kind"]) for a in acc) == sorted(
        [("card-good", "target"), ("card-garbage", "target"), ("card-good", "multiply"), ("card-garbage", "multiply")]
    )
    kinds = {a["candidate_id"]: a["kind"] for a in acc}
    for a in acc:
        if a["kind"] == "multiply":
            assert kinds[a["parent_id"]] == "target"
    # boxes the kill cut short are marked, never left open, never accepted later under the same id
    states = {r["candidate_id"]: r["state"] for r in store.rows("SELECT candidate_id, state FROM candidates")}
    assert "open" not in states.values()
    assert all(states[c] == "accepted" for c in kinds)
    # the folders and the JSONL match the acceptances exactly
    assert sorted(p.name for p in (out / "tasks").iterdir()) == sorted(kinds)
    rows = [json.loads(x) for x in (out / "accepted.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(kinds)
    assert store.rows("SELECT COUNT(*) AS n FROM meta_reviews")[0]["n"] >= 1


def _card(cid: str) -> CapabilityCard:
    return CapabilityCard.model_validate_json(card_line("good").replace("card-good", cid))


def _cand(cid: str, kind="target", parent=None) -> Candidate:
    body = {k: v for k, v in FINAL["good"].items()}
    return Candidate(candidate_id=cid, card_id="c", kind=kind, parent_id=parent, body=body)


def test_a_multiply_sample_never_seeds_another(tmp_path):
    store = SynthStore(tmp_path)
    store.add_card(_card("c"), 1)
    store.start_candidate("t1", "c", "target", None, 0)
    with pytest.raises(LineageError, match="not an accepted sample"):
        store.start_candidate("t1-m0", "c", "multiply", "t1", None)  # not accepted yet
    store.accept(_cand("t1"), store.add_attempt("t1", 0, "generate", None, "", None))
    store.start_candidate("t1-m0", "c", "multiply", "t1", None)
    store.accept(_cand("t1-m0", "multiply", "t1"), store.add_attempt("t1-m0", 0, "generate", None, "", None))
    with pytest.raises(LineageError, match="only target samples seed variants"):
        store.start_candidate("t1-m0-m0", "c", "multiply", "t1-m0", None)
    with pytest.raises(LineageError, match="has no parent"):
        store.start_candidate("t2", "c", "target", "t1", 1)
    # a candidate is accepted once: a second acceptance is refused by the store itself
    with pytest.raises(sqlite3.IntegrityError):
        store.accept(_cand("t1"), 1)
    assert [c.candidate_id for c in store.accepted()] == ["t1", "t1-m0"]
