#!/usr/bin/env python3
"""The per-trial disk quota's cost on a trial start (sandbox/disk_quota.py), paired.

Each run is one trial start as the trial makes it: a scratch folder, [the quota: sparse image,
mkfs.ext4, loop mount], the image's writable root in it (a copy, or an overlay's upper layer),
sandbox start, `exec true`, stop, [unmount], removal. Runs alternate without and with the quota
(the order flipped every run), so load drifts hit both alike. Reports wall p50/p90 and CPU per
start (sandbox.py's CpuMeter: this process and everything it starts) for a small template copied
and the same template under an overlay.

Usage: .venv/bin/python benchmarks/disk_quota.py [--runs 20] [--storage-mb 10240]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import time

from rich.console import Console
from rich.table import Table
from sandbox import CpuMeter  # benchmarks/ is on sys.path when a script here runs
from trial_fs import template_task

from agentmill.images import ImageBuilder
from agentmill.images.layers import remove_tree
from agentmill.runtime.paths import scratch_dir, scratch_temp
from agentmill.sandbox.disk_quota import quota_available, remove_folder, trial_quota
from agentmill.sandbox.registry import create_sandbox


async def one_start(image, quota: bool, storage_mb: int) -> float:
    t = time.perf_counter()
    scratch = await asyncio.to_thread(scratch_temp, "trial")
    if quota:
        await asyncio.to_thread(trial_quota, scratch, storage_mb)
    rootfs = await asyncio.to_thread(image.instantiate, scratch / "rootfs")
    async with create_sandbox(image.spec(rootfs)) as sb:
        r = await sb.exec(["true"])
        assert r.returncode == 0, r
    await asyncio.to_thread(remove_folder, scratch)
    return time.perf_counter() - t


async def main(args) -> int:
    why = quota_available()
    if why is not None:
        print(f"no quota can be mounted here: {why}")
        return 1
    root = scratch_dir() / "bench-disk-quota"
    remove_tree(root)
    root.mkdir(parents=True)
    root.chmod(0o711)
    builder = ImageBuilder(cache=root / "cache", mode="host")
    table = Table(
        title=f"trial start without and with the disk quota ({args.runs} paired runs, storage_mb {args.storage_mb})"
    )
    for col in (
        "root",
        "without p50 / p90 ms",
        "without CPU ms",
        "with p50 / p90 ms",
        "with CPU ms",
        "p50 difference ms",
    ):
        table.add_column(col, justify="right")
    meter = CpuMeter()
    try:
        image = await builder.get(template_task(root, 10))
        for overlay in (False, True):
            variant = dataclasses.replace(image, overlay=overlay)
            walls: dict[bool, list[float]] = {False: [], True: []}
            cpu = {False: 0.0, True: 0.0}
            for quota in (False, True):  # warm-up
                await one_start(variant, quota, args.storage_mb)
            for i in range(args.runs):
                for quota in (False, True) if i % 2 == 0 else (True, False):
                    c = meter.seconds()
                    walls[quota].append(await one_start(variant, quota, args.storage_mb))
                    cpu[quota] += meter.seconds() - c
            row = ["overlay" if overlay else "copy"]
            for quota in (False, True):
                p90 = statistics.quantiles(walls[quota], n=10)[-1]
                row += [
                    f"{statistics.median(walls[quota]) * 1000:.1f} / {p90 * 1000:.1f}",
                    f"{cpu[quota] / args.runs * 1000:.1f}",
                ]
            diffs = [b - a for a, b in zip(walls[False], walls[True])]
            row.append(f"{statistics.median(diffs) * 1000:+.1f}")
            table.add_row(*row)
    finally:
        meter.close()
        remove_tree(root)
    Console().print(table)
    Console().print(f"CPU counted: {meter.scope}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--storage-mb", type=int, default=10240)
    sys.exit(asyncio.run(main(p.parse_args())))
