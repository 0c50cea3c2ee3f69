"""The side-by-side workload of issue 14: N samples, each 5 shell commands from a scripted instant
model, then completion (claim + confirmation), every sample a full isolated trial through
`run_rollout` (image copy, agent sandbox with tmux, verifier sandbox, ledger, trial folder).

    .venv/bin/python benchmarks/workload.py [--samples 50] [--concurrency 1,8] [--json PATH]

Printed per concurrency level: wall seconds, ms per sample (wall / samples, the figure the issue
compares), trials/s, p50 trial latency, CPU ms per sample and how busy the machine was. The model
is the test suite's ChatServer in a child process answering instantly (benchmarks/rollout.py's
Endpoint); each sample is its own task (a variant number in the instruction), all sharing one image.
Exits non-zero unless every sample passed its verifier after exactly 7 model turns.
Run it as root, like agentmill itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rollout as rb  # noqa: E402  benchmarks/rollout.py: endpoint, meters, monitors

from agentmill.images import ImageBuilder  # noqa: E402
from agentmill.rollout.runner import run_rollout  # noqa: E402
from tests.helpers.chat_server import Reply, terminus_json  # noqa: E402

COMMANDS = 5
TURNS = COMMANDS + 2  # five commands, the completion claim, its confirmation
# The model's `duration` for each command: an upper bound, the wait ends when the prompt is back. With
# 0 (no wait at all) the last command could still be queued in the shell when the trial ends.
WAIT = 1.0
TEST_SH = (
    '#!/bin/bash\nif [ "$(cat /app/steps.txt)" = "$(printf \'step-%s\\n\' 1 2 3 4 5)" ]; then '
    "echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
)


def workload_policy(request) -> Reply:
    """Instant replies: turn k (1..5) runs `echo step-k >> /app/steps.txt` (duration WAIT), then complete,
    then confirm."""
    done = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if done < COMMANDS:
        return Reply(terminus_json([(f"echo step-{done + 1} >> /app/steps.txt\n", WAIT)]))
    return Reply(terminus_json([], complete=True))


async def level(base: Path, tasks, endpoint, meter, builder, concurrency: int) -> dict:
    run_dir = base / f"run-c{concurrency}"
    config = rb.level_config(tasks, base, concurrency, endpoint.base_url, 1024)
    client, chat = rb.timed_client(endpoint.base_url, 1024)
    try:
        with rb.Monitor() as mon, rb.CpuWindow(endpoint, meter) as cpu:
            report = await run_rollout(config, tasks, run_dir, client=client, builder=builder, keep_results=True)
    finally:
        await client.close()
    results = report.results
    bad = [r for r in results if not r.passed or r.agent_metadata.get("terminus", {}).get("turns") != TURNS]
    await asyncio.to_thread(shutil.rmtree, run_dir, True)
    return {
        "concurrency": concurrency,
        "samples": report.ran,
        "wall_s": cpu.wall,
        "ms_per_sample": 1e3 * cpu.wall / max(report.ran, 1),
        "trials_per_s": report.ran / cpu.wall,
        "trial_p50_ms": 1e3 * statistics.median(r.timings.total for r in results),
        "cpu_ms_per_sample": 1e3 * cpu.ours / max(report.ran, 1),
        "cores_busy": cpu.ours / cpu.wall,
        "machine_cores_busy": cpu.machine / cpu.wall,
        "not_passed": len(bad) + (len(tasks) - report.ran),
        "failures": [{"task": r.task, "outcome": r.outcome.value, "exception": r.exception} for r in bad[:3]],
        **mon.summary(),
    }


async def run(args, endpoint, meter) -> int:
    base = rb.bench_dir()
    builder = ImageBuilder()
    levels = []
    try:
        tasks = await asyncio.to_thread(
            lambda: [
                rb.make_task(
                    base / "tasks",
                    f"steps-{i:03d}",
                    f"Append step-1 .. step-5 to /app/steps.txt. (sample {i})\n",
                    test_sh=TEST_SH,
                )
                for i in range(args.samples)
            ]
        )
        await builder.get(tasks[0])
        warm = await level(base / "warm", tasks[:2], endpoint, meter, builder, 2)  # untimed: imports, toolkit, caches
        if warm["not_passed"]:
            rb.console.print(f"[red]warm-up did not pass:[/] {warm['failures']}")
            return 1
        for c in args.levels:
            r = await level(base, tasks, endpoint, meter, builder, c)
            levels.append(r)
            rb.console.print(
                f"concurrency {c}: {r['samples']} samples in {r['wall_s']:.2f} s = "
                f"[bold]{r['ms_per_sample']:.0f} ms per sample[/], trial p50 {r['trial_p50_ms']:.0f} ms, "
                f"CPU {r['cpu_ms_per_sample']:.0f} ms/sample, cores busy {r['cores_busy']:.2f} "
                f"(machine {r['machine_cores_busy']:.2f}), loop lag p99 {r['loop_lag_p99_ms']:.0f} ms, "
                f"{r['not_passed']} not passed"
            )
            for f in r["failures"]:
                rb.console.print(f"[red]not passed:[/] {f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    others = max((r["machine_cores_busy"] - r["cores_busy"] for r in levels), default=0.0)
    if meter.path is not None and others > 0.25:
        rb.console.print(f"[yellow]warning:[/] other work kept up to {others:.2f} cores busy: figures understated")
    if args.json:
        args.json.write_text(json.dumps({"samples": args.samples, "levels": levels}, indent=2))
    return 0 if all(r["not_passed"] == 0 for r in levels) else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=50, help="samples (trials) per level (default 50)")
    p.add_argument("--concurrency", default="1,8", help="comma-separated levels (default 1,8)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args()
    args.levels = [int(x) for x in re.split(r"[, ]+", args.concurrency.strip()) if x]
    if args.samples < 1 or not args.levels or min(args.levels) < 1:
        p.error("--samples and every --concurrency level must be >= 1")
    reaps = rb.ReapCounter()
    logging.getLogger("asyncio").addFilter(reaps)
    meter = rb.CpuMeter()
    try:
        with rb.Endpoint("process", policy=workload_policy) as endpoint:
            return asyncio.run(run(args, endpoint, meter))
    finally:
        meter.close()


if __name__ == "__main__":
    sys.exit(main())
