#!/usr/bin/env python3
"""The rollout driver's memory against the number of tasks: peak RSS while planning and over a run.

For each N in --tasks, N tiny distinct tasks are written (one shared Dockerfile, so one image; each
instruction differs, so each has its own content hash; test.sh writes reward 1; solve.sh does nothing), then
`agentmill rollout DATASET --agent nop --out RUN` runs in a fresh child process, exactly as the CLI
runs it (the `typer` app, the progress display, the closing `status` table and outage summary).
The child records its peak RSS (VmHWM) twice:

- *plan*: when the first trial is dispatched (TrialWork is called): everything before any trial
  ran (loading and hashing the tasks, the config, the plan in the ledger, the trial store);
- *run*: at exit, over the whole run;

and, over the run, its current RSS (VmRSS) when a tenth of the trials and when all of them are
recorded (before the closing `status`): the growth per trial between the two (*B/trial*) is what
the driver keeps per trial run, whatever holds it (the Python heap, SQLite, the allocator).

With --plan-only the child exits at the first dispatch (for N too large to run on this machine).
Reported per N: both peaks, and the slope between consecutive N in bytes per task: a driver whose
memory is bounded in the number of tasks has a slope near 0.

Usage: .venv/bin/python benchmarks/driver_memory.py [--tasks 100,1000,10000] [--run-max 1000]
                                                    [--concurrency 8] [--workdir /tmp/bench-driver-memory]
                                                    [--json PATH]
N above --run-max is measured with planning only. Needs what a rollout needs (bubblewrap, root).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_SH = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"


def vm_kib(field: str = "VmHWM") -> int:
    """VmHWM: the peak RSS so far; VmRSS: the RSS now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def make_tasks(root: Path, n: int) -> Path:
    """n task folders (reused when already written)."""
    from agentmill.tasks import write_task

    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    for i in range(n):
        write_task(root / f"t{i:06d}", instruction=f"Task {i}: nothing to do.", test_sh=TEST_SH, solve_sh="true\n")
    done.touch()
    return root


def child(args: argparse.Namespace) -> None:
    """One rollout through the CLI, its peaks written to args.report."""
    from agentmill import cli
    from agentmill.rollout import runner

    peaks: dict = {}
    original = runner.TrialWork.__call__
    record, recorded, trials = runner._record_trial, [0], int(args.tasks)  # one attempt per task

    def record_counts(*a, **k):  # the RSS when a tenth of the trials, and when all, are recorded
        record(*a, **k)
        recorded[0] += 1
        if recorded[0] == max(1, trials // 10):
            peaks["tenth_rss_kib"], peaks["tenth_trials"] = vm_kib("VmRSS"), recorded[0]
        if recorded[0] == trials:
            peaks["last_rss_kib"] = vm_kib("VmRSS")

    async def first_dispatch_records(self, plan):
        if "plan_kib" not in peaks:
            peaks["plan_kib"] = vm_kib()
            peaks["plan_s"] = time.monotonic() - started
            if args.plan_only:
                Path(args.report).write_text(json.dumps(peaks))
                os._exit(0)
        return await original(self, plan)

    runner.TrialWork.__call__ = first_dispatch_records
    runner._record_trial = record_counts
    started = time.monotonic()
    argv = [
        "rollout",
        str(args.dataset),
        "--agent",
        "nop",
        "--out",
        str(args.out),
        "--no-store",
        "--concurrency",
        str(args.concurrency),
    ]
    try:
        cli.app(argv, standalone_mode=False)
    except SystemExit:
        pass
    peaks["run_kib"] = vm_kib()
    peaks["run_s"] = time.monotonic() - started
    Path(args.report).write_text(json.dumps(peaks))


def measure(work: Path, n: int, *, run: bool, concurrency: int) -> dict:
    dataset = make_tasks(work / f"tasks-{n}", n)
    out = work / f"run-{n}"
    shutil.rmtree(out, ignore_errors=True)
    report = work / f"peaks-{n}.json"
    report.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--child", "--dataset", str(dataset), "--out", str(out)]
    cmd += ["--report", str(report), "--concurrency", str(concurrency), "--tasks", str(n)]
    cmd += [] if run else ["--plan-only"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "AGENTMILL_PROGRESS_INTERVAL": "600"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if not report.exists():
        raise SystemExit(f"N={n}: the child wrote no figures (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    peaks = json.loads(report.read_text())
    if run:
        line = next((ln for ln in proc.stdout.splitlines() if "outcomes" in ln), "")  # the status table's
        peaks["outcomes"] = line.replace("│", " ").replace("outcomes", "", 1).strip()
    return {"tasks": n, **peaks}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default="100,1000,10000", help="comma-separated N (the child: its N)")
    p.add_argument("--run-max", type=int, default=1000, help="larger N are measured planning only")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/bench-driver-memory"))
    p.add_argument("--json", type=Path)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--plan-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dataset", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    sys.path.insert(0, str(ROOT / "src"))
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in [int(x) for x in args.tasks.split(",") if x]:
        row = measure(args.workdir, n, run=n <= args.run_max, concurrency=args.concurrency)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{'tasks':>7} {'plan MiB':>9} {'plan s':>7} {'run MiB':>8} {'run s':>7} {'B/trial':>8}  outcomes")
    for r in rows:
        run_mib = f"{r['run_kib'] / 1024:8.1f}" if "run_kib" in r else f"{'-':>8}"
        run_s = f"{r['run_s']:7.1f}" if "run_s" in r else f"{'-':>7}"
        grown = f"{'-':>8}"
        if "last_rss_kib" in r and r["tasks"] > r["tenth_trials"]:
            grown = f"{1024 * (r['last_rss_kib'] - r['tenth_rss_kib']) / (r['tasks'] - r['tenth_trials']):8,.0f}"
        print(
            f"{r['tasks']:>7} {r['plan_kib'] / 1024:9.1f} {r['plan_s']:7.1f} {run_mib} {run_s} {grown}  {r.get('outcomes', '')}"
        )
    print("\nslope, bytes per task added:")
    for a, b in zip(rows, rows[1:]):
        dn = b["tasks"] - a["tasks"]
        line = f"  {a['tasks']} -> {b['tasks']}: plan {1024 * (b['plan_kib'] - a['plan_kib']) / dn:,.0f}"
        if "run_kib" in a and "run_kib" in b:
            line += f", run {1024 * (b['run_kib'] - a['run_kib']) / dn:,.0f}"
        print(line)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
