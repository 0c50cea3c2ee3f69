"""What the grounded tasks' office environment costs: builds the image of a grounded task's
Dockerfile (grounded/environment.py) with the Debian builder, from the shared base, and prints the
office layer's build time and size; `--libreoffice` adds LibreOffice headless (Calc and Writer,
no GUI) to measure it beside. Needs Debian's archive and the agentmill-build user (scripts/setup.sh).

    python benchmarks/office_image.py [--libreoffice] [--cache DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import time
from pathlib import Path

from agentmill.grounded.environment import EnvironmentConfig, dockerfile_text
from agentmill.images import ImageBuilder
from agentmill.tasks import load_task, write_task

LIBREOFFICE = ["libreoffice-calc-nogui", "libreoffice-writer-nogui"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--libreoffice", action="store_true")
    ap.add_argument("--cache", type=Path, default=None)
    args = ap.parse_args()
    env = EnvironmentConfig(extra_packages=LIBREOFFICE) if args.libreoffice else EnvironmentConfig()
    with tempfile.TemporaryDirectory() as tmp:
        root = write_task(
            Path(tmp) / "office",
            instruction="-",
            test_sh="#!/bin/bash\ntrue\n",
            dockerfile=dockerfile_text(env),
            environment_files={"workspace/README.md": "x\n"},
        )
        task = load_task(root)
        task.config.environment.build_timeout_sec = 3600
        builder = ImageBuilder(cache=args.cache, mode="debian")
        started = time.monotonic()
        image = asyncio.run(builder.get(task))
        wall = time.monotonic() - started
        store = builder.store
    layers = [store.info(k) for k in image.layers]
    office = next(i for i in layers if i and "apt-get install" in i.step)
    system = subprocess.run(["du", "-sb", image.system], capture_output=True, text=True).stdout.split()[0]
    print(
        json.dumps(
            {
                "libreoffice": args.libreoffice,
                "packages": env.all_packages(),
                "wall_seconds": round(wall, 1),
                "office_layer_build_seconds": office.build_seconds,
                "office_layer_mb": round(office.size_bytes / 2**20, 1),
                "image_rootfs_mb": round(int(system) / 2**20, 1),
                "layers": [
                    {"step": i.step[:60], "seconds": i.build_seconds, "mb": round(i.size_bytes / 2**20, 1)}
                    for i in layers
                    if i
                ],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
