"""Export throughput and peak memory: N synthetic 30-turn trajectories written as a real run folder,
then exported by `agentmill export` (read, filter, render, redact, write: a stream) in a child process.

    .venv/bin/python benchmarks/export.py [--n 10000] [--turns 30] [--format trl] [--workers W] [--src DIR]
                                          [--workdir /tmp/bench-export]

The run folder is built once per (n, turns) and reused. Printed: rows/s of the export, the peak RSS
of the export process itself and of its largest worker process (their own getrusage, so building the
run folder does not count), the workers used and the load average. --workers sets export_run's
workers (default: its own choice, one per core for a large run); --src runs the export with another
tree's `src` folder (a baseline: `git archive <commit> src | tar -x -C /tmp/base`; it may predate
--workers). The output file is kept (out.<format>.jsonl) for `cmp` against a baseline's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.traces.builders import terminus_trajectory, write_trial  # noqa: E402


def build_run(run: Path, n: int, turns: int) -> None:
    marker = run / ".complete"
    if marker.exists():
        return
    shutil.rmtree(run, ignore_errors=True)
    for i in range(n):
        steps = [
            (
                f"cd /app && grep -n 'item {i}-{t}' data.csv | head -20\n",
                "\n".join(f"{k}: row {i},{t},{k},value-{k * t}" for k in range(12)),
            )
            for t in range(turns)
        ]
        traj = terminus_trajectory(steps, reasoning=f"Looking at the output of step {i}; next I check the totals.")
        write_trial(
            run,
            f"t{i:07d}",
            traj,
            outcome="passed" if i % 3 else "failed",
            reward=1.0 if i % 3 else 0.0,
            task=f"task{i % 500}",
        )
    marker.write_text("")


EXPORT = """
import json, resource, sys, time
from pathlib import Path
from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
run, fmt, out, workers = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
t = time.perf_counter()
report = export_run(run, fmt, out, spec=FilterSpec(), **({"workers": int(workers)} if workers else {}))
seconds = time.perf_counter() - t
print(json.dumps({"rows": report.rows, "export_s": seconds,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "worker_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--format", default="trl")
    ap.add_argument("--workdir", default="/tmp/bench-export")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--src", type=Path, default=None, help="export with this src folder (a baseline tree)")
    args = ap.parse_args()
    work = Path(args.workdir)
    run = work / f"run-{args.n}x{args.turns}"
    t0 = time.perf_counter()
    build_run(run, args.n, args.turns)
    built = time.perf_counter() - t0
    out = work / f"out.{args.format}.jsonl"
    env = {**os.environ, "PYTHONPATH": str(args.src)} if args.src else None
    load_before = os.getloadavg()[0]
    proc = subprocess.run(
        [sys.executable, "-c", EXPORT, str(run), args.format, str(out), str(args.workers or "")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    res = json.loads(proc.stdout)
    print(
        json.dumps(
            {
                "trajectories": args.n,
                "turns": args.turns,
                "format": args.format,
                "rows": res["rows"],
                "build_s": round(built, 1),
                "export_s": round(res["export_s"], 1),
                "rows_per_s": round(res["rows"] / res["export_s"], 1),
                "peak_rss_mib": round(res["peak_rss_mib"]),
                "worker_peak_rss_mib": round(res["worker_peak_rss_mib"]),
                "workers": args.workers or "auto",
                "src": str(args.src or ROOT / "src"),
                "load_avg_1m": [load_before, os.getloadavg()[0]],
                "output_mib": round(out.stat().st_size / 2**20, 1),
                "host_peak_rss_mib_of_builder": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
