#!/usr/bin/env python3
"""Failure-driven synthesis benchmark: candidates per minute through every gate, and where the time goes.

Every role is the test suite's scripted chat server answering instantly (tests/synth/scripted.py):
the generator writes a sound candidate over the tiny helpdesk gym, the judge approves, the target
gives up at once and the solver replays the reference calls. So each candidate passes every gate on
its first attempt, and the figure is the pipeline's own cost: the structural lint's sandbox, the
oracle trial (positive), the mutation audit (negative) and 2 x k tools-agent trials (ballot), plus
the store. Time per gate is the mean wall time of that gate per candidate (gates of concurrent
boxes overlap, so the per-gate sums exceed the wall time when workers > 1).

Usage: .venv/bin/python benchmarks/synth.py [--cards 6] [--workers 1,4] [--k 3] [--json PATH]
Needs bubblewrap and util-linux; run as root, like agentmill itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # tests.synth.scripted, tests.helpers.chat_server

from agentmill.synth.config import load_config  # noqa: E402
from agentmill.synth.run import run_synth  # noqa: E402
from agentmill.synth.store import SynthStore  # noqa: E402
from tests.synth.scripted import card_line, config_text, role_servers  # noqa: E402


def one(cards: int, workers: int, k: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="synth-bench-") as tmp, ExitStack() as stack:
        tmp = Path(tmp)
        (tmp / "cards.jsonl").write_text("".join(card_line("good").replace("card-good", f"card-{i:03d}") + "\n"
                                                 for i in range(cards)))
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        text = config_text(servers, tmp / "cards.jsonl", workers=workers, max_slots=cards, meta_review_every=4)
        (tmp / "synth.toml").write_text(text.replace("k = 3", f"k = {k}"))
        started = time.monotonic()
        summary = asyncio.run(run_synth(load_config(tmp / "synth.toml"), tmp / "out"))
        wall = time.monotonic() - started
        store = SynthStore.open_existing(tmp / "out")
        gates = {r["gate"]: r["s"] / r["n"] for r in store.rows(
            "SELECT gate, COUNT(*) AS n, SUM(seconds) AS s FROM gate_results GROUP BY gate")}
        store.close()
    if summary["accepted"] != cards:
        raise SystemExit(f"expected {cards} accepted candidates, got {summary['accepted']}: the benchmark is broken")
    return {"cards": cards, "workers": workers, "k": k, "wall_s": round(wall, 2),
            "candidates_per_min": round(cards / wall * 60, 2), "gate_mean_s": {g: round(s, 3) for g, s in gates.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", type=int, default=6)
    ap.add_argument("--workers", default="1,4")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {load:.1f}")
    results = []
    for w in [int(x) for x in args.workers.split(",")]:
        r = one(args.cards, w, args.k)
        results.append(r)
        gates = ", ".join(f"{g} {s:.2f}s" for g, s in r["gate_mean_s"].items())
        print(f"workers {w}: {r['cards']} candidates in {r['wall_s']:.1f}s = {r['candidates_per_min']:.1f}/min; "
              f"per candidate: {gates}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
