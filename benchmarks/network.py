#!/usr/bin/env python3
"""The agent's internet on a trial start (sandbox/internet.py), paired.

Each run is one trial start as the trial makes it: a scratch folder, the image's writable root in it
(a copy, or an overlay's upper layer), sandbox start (with the internet: pasta's namespaces, the
firewall from the host's addresses, then bwrap), `exec true`, stop, removal. Runs alternate without
and with the internet (the order flipped every run), so load drifts hit both alike. Reports wall
p50/p90 and CPU per start (sandbox.py's CpuMeter: this process and everything it starts) for a
small template copied and the same template under an overlay.

Usage: .venv/bin/python benchmarks/network.py [--runs 20]
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
from agentmill.sandbox.disk_quota import remove_folder
from agentmill.sandbox.internet import require_internet_tools
from agentmill.sandbox.registry import create_sandbox


async def one_start(image, internet: bool) -> float:
    t = time.perf_counter()
    scratch = await asyncio.to_thread(scratch_temp, "trial")
    rootfs = await asyncio.to_thread(image.instantiate, scratch / "rootfs")
    async with create_sandbox(image.spec(rootfs, internet=internet)) as sb:
        r = await sb.exec(["true"])
        assert r.returncode == 0, r
    await asyncio.to_thread(remove_folder, scratch)
    return time.perf_counter() - t


async def main(args) -> int:
    require_internet_tools()
    root = scratch_dir() / "bench-network"
    remove_tree(root)
    root.mkdir(parents=True)
    root.chmod(0o711)
    builder = ImageBuilder(cache=root / "cache", mode="host")
    table = Table(title=f"trial start without and with the internet ({args.runs} paired runs)")
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
            for internet in (False, True):  # warm-up
                await one_start(variant, internet)
            for i in range(args.runs):
                for internet in (False, True) if i % 2 == 0 else (True, False):
                    c = meter.seconds()
                    walls[internet].append(await one_start(variant, internet))
                    cpu[internet] += meter.seconds() - c
            row = ["overlay" if overlay else "copy"]
            for internet in (False, True):
                p90 = statistics.quantiles(walls[internet], n=10)[-1]
                row += [
                    f"{statistics.median(walls[internet]) * 1000:.1f} / {p90 * 1000:.1f}",
                    f"{cpu[internet] / args.runs * 1000:.1f}",
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
    sys.exit(asyncio.run(main(p.parse_args())))
