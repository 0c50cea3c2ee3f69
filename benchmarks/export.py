"""Export throughput: rows per second and peak memory exporting N synthetic 30-turn trajectories.

    .venv/bin/python benchmarks/export.py [--n 10000] [--turns 30] [--format trl] [--out /tmp/bench-export.jsonl]

Trajectories are built in memory (terminus-style: JSON replies, terminal output, reasoning), then
filtered (default FilterSpec), rendered, redacted and written exactly as `agentmill export` does.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentmill.traces.filters import FilterSpec, apply_filters, rules  # noqa: E402
from agentmill.traces.formats import build_rows  # noqa: E402
from agentmill.traces.records import TraceRecord  # noqa: E402
from agentmill.traces.telemetry import compute_telemetry  # noqa: E402
from agentmill.traces.writer import write_rows  # noqa: E402
from tests.traces.builders import terminus_trajectory  # noqa: E402


def synthetic(i: int, turns: int) -> TraceRecord:
    steps = [(f"cd /app && grep -n 'item {i}-{t}' data.csv | head -20\n",
              "\n".join(f"{k}: row {i},{t},{k},value-{k * t}" for k in range(12))) for t in range(turns)]
    traj = terminus_trajectory(steps, reasoning=f"Looking at the output of step {i}; next I check the totals.")
    result = {"outcome": "passed" if i % 3 else "failed", "reward": 1.0 if i % 3 else 0.0,
              "agent_metadata": {"terminus": {"completed": True}}}
    trial = {"trial_id": f"t{i:06d}", "task": f"task{i % 500}", "task_hash": f"h{i % 500}", "task_source": "/bench",
             "verifier_hash": "v", "attempt": 0, "agent": "terminus", "agent_version": "1", "model": "teacher",
             "sampling": {"temperature": 0.7}}
    return TraceRecord(trial, result, traj, compute_telemetry(traj, result))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--format", default="trl")
    ap.add_argument("--out", default="/tmp/bench-export.jsonl")
    args = ap.parse_args()
    t0 = time.perf_counter()
    records = [synthetic(i, args.turns) for i in range(args.n)]
    built = time.perf_counter() - t0
    t1 = time.perf_counter()
    kept, _ = apply_filters(records, rules(FilterSpec()))
    rows, redactions = build_rows(args.format, kept, "think")
    write_rows(rows, Path(args.out))
    seconds = time.perf_counter() - t1
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = Path(args.out).stat().st_size / 2**20
    print(json.dumps({"trajectories": args.n, "turns": args.turns, "format": args.format, "rows": len(rows),
                      "build_s": round(built, 1), "export_s": round(seconds, 1), "rows_per_s": round(len(rows) / seconds, 1),
                      "peak_rss_mib": round(peak_mib), "output_mib": round(size, 1)}, indent=2))


if __name__ == "__main__":
    main()
