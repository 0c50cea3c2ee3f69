"""The viewer at scale: a synthetic ledger of N finished trials (and optionally M real trial folders),
then the index build and the list pages the page asks for, through the real HTTP server.

    .venv/bin/python benchmarks/view.py [--n 100000] [--folders 2000] [--workdir /tmp/bench-view]

Printed: seconds to copy the ledger into the index (first open), seconds to read M trial folders'
facts (turns, tamper, filter verdicts), a re-open with nothing new, and the p50/max milliseconds of
list requests (first page, a deep offset, the last page, filters, sorts) over HTTP.
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
from tests.traces.builders import terminus_trajectory, write_trial  # noqa: E402
from tests.view.synthetic import synthetic_ledger  # noqa: E402

REQUESTS = {
    "first page": "/api/trials?limit=50",
    "offset 50,000": "/api/trials?limit=50&offset=50000",
    "last page": "/api/trials?limit=50&offset={last}",
    "outcome filter": "/api/trials?outcome=failed&limit=50&offset=1000",
    "sort tokens desc": "/api/trials?sort=tokens&desc=1&limit=50",
    "search text": "/api/trials?q=task-0042&limit=50",
    "summary (facets)": "/api/summary",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--folders", type=int, default=2_000, help="trials that also get a real folder (10 turns each)")
    ap.add_argument("--workdir", default="/tmp/bench-view")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    run = Path(args.workdir) / "run"
    shutil.rmtree(run, ignore_errors=True)
    t = time.perf_counter()
    synthetic_ledger(run, args.n)
    for i in range(args.folders):  # the same ids as the ledger rows, so their facts are read
        traj = terminus_trajectory([(f"ls /app/{i}-{k}\n", f"file-{k}\n" * 5) for k in range(10)])
        write_trial(run, f"t{i:07d}", traj, task=f"task-{i % 1000:05d}")
    print(f"built: {args.n:,} ledger rows, {args.folders:,} folders in {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    source = open_source(run)
    first = time.perf_counter() - t
    print(f"first open (ledger copy + {args.folders:,} folders read): {first:.2f} s")
    t = time.perf_counter()
    open_source(run)
    print(f"re-open, nothing new: {time.perf_counter() - t:.2f} s")

    server = ViewServer(source, 0)
    server.start_background()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    print(f"{'request':<20} {'p50 ms':>8} {'max ms':>8}")
    for name, path in REQUESTS.items():
        path = path.format(last=args.n - 50)
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            assert r.status == 200, (path, r.status)
            times.append((time.perf_counter() - t) * 1000)
        print(f"{name:<20} {statistics.median(times):>8.1f} {max(times):>8.1f}")
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
