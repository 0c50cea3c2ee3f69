"""The viewer on a large synthesis store: a store of cards x per_card target candidates (1-2 attempts
each, their gate results, one multiply variant per accepted target; tests/view/synth_big.py), then
the JSON routes the synth panel asks for, through the real HTTP server.

    .venv/bin/python benchmarks/view_synth.py [--cards 1000] [--per-card 100] [--workdir /tmp/bench-view-synth]

Printed: seconds to write the store, its row counts, and the p50/max milliseconds of each request
(20 of each, on one keep-alive connection).
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentmill.view import ViewServer, open_source  # noqa: E402
from tests.view.synth_big import big_synth_store  # noqa: E402


def requests(cards: int, total: int) -> dict[str, str]:
    mid = f"card-{cards // 2:04d}"
    return {
        "summary (funnel, counts)": "/api/summary",
        "candidates: first page": "/api/candidates?limit=50",
        "candidates: last page": f"/api/candidates?limit=50&offset={max(0, total - 50)}",
        "candidates: failed at negative": "/api/candidates?gate=negative&limit=50",
        "candidates: rejected, offset 5,000": "/api/candidates?state=rejected&limit=50&offset=5000",
        "candidates: one card": f"/api/candidates?card={mid}",
        "one candidate's history": f"/api/candidate?id={mid}-s0050",
        "lineage: cards page": "/api/lineage?limit=50&offset=100",
        "lineage: one card": f"/api/lineage?card={mid}",
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cards", type=int, default=1000)
    ap.add_argument("--per-card", type=int, default=100)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench-view-synth"))
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    t = time.perf_counter()
    counts = big_synth_store(args.workdir / "out", cards=args.cards, per_card=args.per_card)
    print(
        f"store written in {time.perf_counter() - t:.1f} s: {counts['candidates']:,} candidates, "
        f"{counts['gate_results']:,} gate results, {counts['accepted']:,} accepted"
    )
    server = ViewServer(open_source(args.workdir / "out"), 0)
    server.start_background()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        for label, path in requests(args.cards, counts["candidates"]).items():
            times = []
            for _ in range(20):
                t = time.perf_counter()
                conn.request("GET", path)
                r = conn.getresponse()
                r.read()
                assert r.status == 200, (path, r.status)
                times.append((time.perf_counter() - t) * 1000)
            print(f"{label:40s} p50 {statistics.median(times):7.1f} ms   max {max(times):7.1f} ms")
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
