#!/usr/bin/env python3
"""Trial filesystems: what a trial's writable root costs, by the size of the image's template.

For templates of about 10, 120, 1,900 and 20,000 entries (host-userland images, 1 kB files under /app),
times a trial start both ways, one after the other: the filesystem (`Image.instantiate`: a copy, or
an empty upper layer for an overlay) + sandbox start + one exec + stop, and reports wall p50/p90
and CPU per start (sandbox.py's CpuMeter: this process and everything it starts, the overlay's
daemonized fuse-overlayfs included, which rusage would miss), and which way `auto` (the default) picks.

Usage: .venv/bin/python benchmarks/trial_fs.py [--runs 20] [--sizes 10,120,1900,20000]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sandbox import CpuMeter  # benchmarks/ is on sys.path when a script here runs

from agentmill.images import ImageBuilder
from agentmill.images.layers import remove_tree
from agentmill.images.trial_fs import OVERLAY_FROM
from agentmill.runtime.paths import scratch_dir
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks import load_task, write_task


def template_task(root: Path, entries: int):
    make = (
        f"RUN mkdir -p /app/d && python3 -c \"[open(f'/app/d/f{{i}}', 'w').write('x' * 1000) "
        f'for i in range({entries})]"\n'
    )
    return load_task(
        write_task(
            root / f"t{entries}",
            instruction="x",
            solve_sh="true\n",
            test_sh="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
            dockerfile=f"FROM debian:bookworm-slim\nWORKDIR /app\n{make}",
        )
    )


async def one_start(image, root: Path) -> float:
    dest = root / f"trial-{uuid.uuid4().hex[:8]}"
    t = time.perf_counter()
    rootfs = await asyncio.to_thread(image.instantiate, dest)
    async with create_sandbox(image.spec(rootfs)) as sb:
        r = await sb.exec(["true"])
        assert r.returncode == 0, r
    took = time.perf_counter() - t
    await asyncio.to_thread(remove_tree, dest)
    return took


async def main(args) -> int:
    root = scratch_dir() / "bench-trial-fs"
    remove_tree(root)
    root.mkdir(parents=True)
    root.chmod(0o711)
    builder = ImageBuilder(cache=root / "cache", mode="host")
    table = Table(title=f"trial start by template size ({args.runs} runs each, after one warm-up)")
    for col in (
        "files in /app",
        "template entries",
        "auto picks",
        "copy p50 / p90 ms",
        "copy CPU ms",
        "overlay p50 / p90 ms",
        "overlay CPU ms",
    ):
        table.add_column(col, justify="right")
    meter = CpuMeter()
    try:
        for size in args.sizes:
            image = await builder.get(template_task(root, size))
            row = [
                f"{size:,}",
                str(image.template_entries if image.template_entries <= OVERLAY_FROM else f"> {OVERLAY_FROM}"),
                "overlay" if image.overlay else "copy",
            ]
            for overlay in (False, True):
                variant = dataclasses.replace(image, overlay=overlay)
                await one_start(variant, root)
                cpu = meter.seconds()
                walls = [await one_start(variant, root) for _ in range(args.runs)]
                cpu = (meter.seconds() - cpu) / args.runs
                p90 = statistics.quantiles(walls, n=10)[-1] if len(walls) > 1 else walls[0]
                row += [f"{statistics.median(walls) * 1000:.1f} / {p90 * 1000:.1f}", f"{cpu * 1000:.1f}"]
            table.add_row(*row)
            Console().print(f"size {size}: done", style="dim")
    finally:
        meter.close()
        remove_tree(root)
    Console().print(table)
    Console().print(f"CPU counted: {meter.scope}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10, 120, 1900, 20000])
    sys.exit(asyncio.run(main(p.parse_args())))
