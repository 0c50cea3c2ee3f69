#!/usr/bin/env python3
"""Failure-driven synthesis benchmark: candidates per minute through every gate, and where the time goes.

Every role is the test suite's scripted chat server answering instantly (tests/synth/scripted.py):
the generator writes a sound candidate over the tiny helpdesk gym, the judge approves, the target
gives up at once and the solver replays the reference calls. So each candidate passes every gate on
its first attempt, and the figure is the pipeline's own cost: the structural lint's sandbox, the
oracle trial (positive), the mutation audit (negative) and the ballot's tools-agent trials (k = 3 stops
early: 2 target + 2 solver trials decide it here), plus
the store. Time per gate is the mean wall time of that gate per candidate (gates of concurrent
boxes overlap, so the per-gate sums exceed the wall time when workers > 1).

With --local-model it instead runs `agentmill synth run` end to end with every role (generator, critic,
judge, target, solver) the embedded SmolLM2 on loopback, over a tiny config (tests/synth/local_smoke.py:
one card, one slot, one repair, k = 1, tight token limits), then `agentmill synth report`, and prints the
funnel, the requests and tokens per role, the time per gate and the wall time. SmolLM2-135M is a smoke-test
model: it is expected to be rejected; the script fails (exit 1) if the run crashes, leaves anything
untyped (tests/synth/local_smoke.py: typed_outcome_problems) or the report does not render.

Usage: .venv/bin/python benchmarks/synth.py [--cards 6] [--workers 1,4] [--k 3] [--json PATH]
       .venv/bin/python benchmarks/synth.py --local-model [--gym itsm|helpdesk] [--diagnosis] [--keep DIR]
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
        (tmp / "cards.jsonl").write_text(
            "".join(card_line("good").replace("card-good", f"card-{i:03d}") + "\n" for i in range(cards))
        )
        servers = {r: stack.enter_context(s) for r, s in role_servers().items()}
        text = config_text(servers, tmp / "cards.jsonl", workers=workers, max_slots=cards, meta_review_every=4)
        (tmp / "synth.toml").write_text(text.replace("k = 3", f"k = {k}"))
        started = time.monotonic()
        summary = asyncio.run(run_synth(load_config(tmp / "synth.toml"), tmp / "out"))
        wall = time.monotonic() - started
        store = SynthStore.open_existing(tmp / "out")
        gates = {
            r["gate"]: r["s"] / r["n"]
            for r in store.rows("SELECT gate, COUNT(*) AS n, SUM(seconds) AS s FROM gate_results GROUP BY gate")
        }
        store.close()
    if summary["accepted"] != cards:
        raise SystemExit(f"expected {cards} accepted candidates, got {summary['accepted']}: the benchmark is broken")
    return {
        "cards": cards,
        "workers": workers,
        "k": k,
        "wall_s": round(wall, 2),
        "candidates_per_min": round(cards / wall * 60, 2),
        "gate_mean_s": {g: round(s, 3) for g, s in gates.items()},
    }


def local_model(gym: str, keep: Path | None, diagnosis: bool = False) -> int:
    """The real-model run; returns the exit status (0: it ran, every outcome typed, the report rendered)."""
    import signal
    import subprocess

    from agentmill.synth.report import funnel
    from tests.synth.local_smoke import typed_outcome_problems, write_config
    from tests.synth.scripted import GYM

    with tempfile.TemporaryDirectory(prefix="synth-local-") as tmp:
        root = keep or Path(tmp)
        from agentmill.tasks import sample_tools_path

        task = sample_tools_path() / "itsm-route-incident-to-dba" if diagnosis else None
        config = write_config(root / "config", gym=gym, gym_dir=GYM if gym == "helpdesk" else None, diagnosis_task=task)
        out = root / "out"
        cmd = [sys.executable, "-m", "agentmill.cli", "synth", "run", str(config), "--out", str(out)]
        print("$ " + " ".join(cmd[2:]) + f"\n{config.read_text()}", flush=True)
        started = time.monotonic()
        proc = subprocess.Popen(cmd)
        try:
            rc = proc.wait()
        except BaseException:
            proc.send_signal(signal.SIGINT)  # its finally blocks stop the embedded model server
            proc.wait(60)
            raise
        wall = time.monotonic() - started
        if rc != 0:
            print(f"agentmill synth run exited {rc}")
            return 1
        store = SynthStore.open_existing(out)
        try:
            print(f"\nwall time {wall:.0f}s; funnel (passed/entered, failures by code):")
            for row in funnel(store):
                print(f"  {row['gate']:<9} {row['passed']}/{row['entered']}  {row['failed'] or ''}")
            for r in store.rows(
                "SELECT a.candidate_id, a.n, a.origin, g.gate, g.code, d.category, d.by FROM attempts a "
                "LEFT JOIN gate_results g ON g.attempt_id = a.attempt_id AND g.passed = 0 "
                "LEFT JOIN diagnoses d ON d.attempt_id = a.attempt_id ORDER BY a.attempt_id"
            ):
                print(
                    f"  attempt {r['n']} of {r['candidate_id']} ({r['origin']}): {r['gate']} {r['code']} "
                    f"-> {r['category']} (by {r['by']})"
                )
            for r in store.rows("SELECT candidate_id, state, reason FROM candidates"):
                print(f"  {r['candidate_id']}: {r['state']}: {(r['reason'] or '')[:160]}")
            for u in store.rows("SELECT * FROM usage ORDER BY role"):
                print(
                    f"  role {u['role']:<9} {u['requests']} requests, {u['prompt_tokens']} prompt + "
                    f"{u['completion_tokens']} completion tokens"
                )
            for g in store.rows("SELECT gate, COUNT(*) AS n, SUM(seconds) AS s FROM gate_results GROUP BY gate"):
                print(f"  gate {g['gate']:<9} {g['n']} runs, {g['s']:.1f}s")
        finally:
            store.close()
        problems = typed_outcome_problems(out)
        report = out / "report.html"
        if not report.is_file() or "Funnel per gate" not in report.read_text():
            problems.append("report.html missing or without its funnel")
        for p in problems:
            print(f"NOT TYPED: {p}")
        print("ok: every outcome typed, report rendered" if not problems else f"{len(problems)} problems")
        return 1 if problems else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", type=int, default=6)
    ap.add_argument("--workers", default="1,4")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--local-model", action="store_true", help="every role the embedded SmolLM2 (see the docstring)")
    ap.add_argument(
        "--gym",
        choices=["itsm", "helpdesk"],
        default="itsm",
        help="--local-model: the bundled itsm gym, or the test suite's tiny helpdesk gym (a shorter generator prompt)",
    )
    ap.add_argument("--keep", type=Path, help="--local-model: write the config and output here (kept)")
    ap.add_argument(
        "--diagnosis",
        action="store_true",
        help="--local-model: no cards file; the diagnosis rollouts "
        "(target, teacher) and the card writer, all SmolLM2, on the bundled itsm-route-incident-to-dba task",
    )
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {load:.1f}")
    if args.local_model:
        raise SystemExit(local_model(args.gym, args.keep, args.diagnosis))
    results = []
    for w in [int(x) for x in args.workers.split(",")]:
        r = one(args.cards, w, args.k)
        results.append(r)
        gates = ", ".join(f"{g} {s:.2f}s" for g, s in r["gate_mean_s"].items())
        print(
            f"workers {w}: {r['cards']} candidates in {r['wall_s']:.1f}s = {r['candidates_per_min']:.1f}/min; "
            f"per candidate: {gates}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
