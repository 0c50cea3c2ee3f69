#!/usr/bin/env python3
"""Sandbox and trial throughput benchmark for agentmill.

Two measurements:

1. Latency of one bubblewrap sandbox lifecycle: start (guest exec server up), exec `true`
   through the guest, stop (pid namespace and cgroup torn down). Each run gets a fresh, empty
   rootfs under scratch_dir(). Compared with a plain `asyncio.create_subprocess_exec("true")`.
2. Trials per second: full oracle trials (image cache hit -> rootfs copy -> agent sandbox ->
   solve.sh -> fresh verifier sandbox -> test.sh -> reward) over a tiny task, at several
   concurrency levels, every trial checked to have passed.

3. With --images (instead of 1 and 2): Debian-built images (AGENTMILL_IMAGES=debian): the base
   (mmdebstrap) cold and cached, a three-step Dockerfile cold (every layer built) and cached, and
   trial start (environment copy or overlay + sandbox start + first exec) for a host-userland image
   and a Debian-built one. --cold-base also rebuilds the base in a private layer store (tens of seconds).

Usage: .venv/bin/python benchmarks/sandbox.py [--runs 100] [--trials 64] [--concurrency 1,8,32]
                                              [--no-trials] [--vs-tree SRC] [--json PATH] [--images [--cold-base]]
--vs-tree SRC also times another source tree's sandbox (its agentmill/sandbox/bwrap.py, the helpers
beside it and its guest folder), one lifecycle of each in turn, and prints paired differences: a
before/after comparison that a busy machine's drift does not skew.
Exits non-zero if any sandbox exec or any trial did not succeed. Needs bubblewrap, util-linux
(prlimit, setpriv) and, for the trial part, the host python3 that the sandboxes use.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from agentmill.agents import OracleAgent
from agentmill.images.build import ImageBuilder
from agentmill.rollout.trial import run_trial
from agentmill.runtime.paths import scratch_dir
from agentmill.sandbox.bwrap import BwrapSandbox
from agentmill.sandbox.protocol import SandboxSpec
from agentmill.tasks import load_task, write_task

console = Console(highlight=False, width=max(shutil.get_terminal_size((110, 24)).columns, 110))

SOLVE_SH = """#!/bin/bash
set -euo pipefail
echo "hello from the oracle" > /app/answer.txt
"""

TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = "hello from the oracle" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


# -- helpers -----------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Percentile by linear interpolation (q in 0..100); values in seconds."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


class ReapCounter(logging.Filter):
    """Counts (and keeps out of the tables) asyncio's "Unknown child process pid N, will report
    returncode 255" warnings. They mean a sandbox's process was reaped behind asyncio's child
    watcher: BwrapSandbox.stop() calls Process.kill() after killpg(), and Popen.kill() polls, so
    reaps, the child that just died. Harmless for the figures; summarised at the end.
    """

    count = 0

    def filter(self, record):
        if "Unknown child process pid" in record.getMessage():
            self.count += 1
            return False
        return True


class CpuMeter:
    """CPU seconds spent by this process and everything it starts, sandboxes included.

    On cgroup v1 as root: this process joins a cpuacct group of its own, which every child
    inherits (sandboxes move themselves into memory/pids/cpu groups, never cpuacct), so other
    work on the machine is not counted. Elsewhere: whole-machine busy time from /proc/stat.
    """

    def __init__(self):
        self.path: Path | None = None
        base = Path("/sys/fs/cgroup/cpuacct")
        if os.geteuid() == 0 and (base / "cpuacct.usage").exists():
            path = base / f"agentmill-bench-{os.getpid()}"
            try:
                path.mkdir(exist_ok=True)
                (path / "cgroup.procs").write_text(str(os.getpid()))
                self.path = path
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
        self.scope = "this benchmark and its sandboxes (cpuacct)" if self.path else "whole machine (/proc/stat)"

    def seconds(self) -> float:
        if self.path is not None:
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        return self.machine_seconds()

    @staticmethod
    def machine_seconds() -> float:
        """Busy CPU seconds of the whole machine, all processes and kernel threads."""
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]  # guest time is already in user
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            (self.path.parent / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):  # the last sandbox processes may still be exiting
            try:
                self.path.rmdir()
                break
            except OSError:
                time.sleep(0.02)
        self.path = None


def bench_dir() -> Path:
    # named <kind>-<pid>-..., like agentmill's own scratch folders, so a sweep removes it if we die
    d = Path(tempfile.mkdtemp(prefix=f"bench-{os.getpid()}-", dir=scratch_dir()))
    d.chmod(0o711)  # sandbox uids must traverse it to reach their rootfs
    return d


# -- 1. sandbox lifecycle latency ----------------------------------------------------------------


async def one_sandbox(base: Path, i: int | str, backend=BwrapSandbox) -> dict[str, float]:
    rootfs = base / f"rootfs-{i}"
    rootfs.mkdir()
    t0 = time.perf_counter()
    async with backend(SandboxSpec(rootfs=rootfs, workdir="/")) as sb:
        t1 = time.perf_counter()
        result = await sb.exec(["true"])
        t2 = time.perf_counter()
    t3 = time.perf_counter()
    await asyncio.to_thread(shutil.rmtree, rootfs, True)
    if result.returncode != 0:
        raise RuntimeError(f"`true` exited {result.returncode} in the sandbox: {result.output[-500:]}")
    return {"start": t1 - t0, "exec": t2 - t1, "stop": t3 - t2, "total": t3 - t0}


async def bench_sandbox(runs: int, warmup: int) -> dict:
    base = bench_dir()
    try:
        for i in range(warmup):  # first start copies the guest assets, warms the page cache
            await one_sandbox(base, -1 - i)
        samples = [await one_sandbox(base, i) for i in range(runs)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {key: [s[key] for s in samples] for key in ("start", "exec", "stop", "total")}


# -- 1b. the lifecycle of another source tree, alternating with this one --------------------------

_VS_MODULES = ("uids", "limits", "watch")  # what another tree's bwrap.py may import from its own folder


def other_tree_backend(src: Path):
    """BwrapSandbox as another source tree has it: its sandbox/bwrap.py, the helper modules beside
    it and its guest folder, loaded under private names next to this tree's."""
    import importlib.util
    import types

    folder = src / "agentmill" / "sandbox"
    if not (folder / "bwrap.py").is_file():
        raise SystemExit(f"--vs-tree {src}: no agentmill/sandbox/bwrap.py under it (give the tree's src folder)")
    code_dir = Path(tempfile.mkdtemp(prefix="vs-tree-"))
    names = [m for m in _VS_MODULES if (folder / f"{m}.py").is_file()]

    def load(name: str) -> types.ModuleType:
        text = (folder / f"{name}.py").read_text()
        for m in names:
            text = text.replace(f"from agentmill.sandbox.{m} import", f"from vs_tree_{m} import")
        text = text.replace('@sandbox_backend("bwrap")', "")  # this tree's class keeps the name
        path = code_dir / f"vs_tree_{name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"vs_tree_{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    for m in names:
        load(m)
    bwrap = load("bwrap")
    guest = scratch_dir() / "assets" / f"vs-tree-guest-{os.getpid()}"
    shutil.rmtree(guest, ignore_errors=True)
    shutil.copytree(folder / "guest", guest, ignore=shutil.ignore_patterns("__pycache__"))
    for p in [guest, *guest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    own_assets = bwrap.package_assets
    bwrap.package_assets = lambda name: guest if name == "guest" else own_assets(name)
    return bwrap.BwrapSandbox, guest


async def bench_vs(runs: int, warmup: int, other, meter: CpuMeter) -> dict:
    """This tree's lifecycle and the other's, alternating (the order flips every round), so both
    meet the same load; CPU is read around each lifecycle."""
    base = bench_dir()
    samples: dict[str, list[dict]] = {"this": [], "other": []}
    try:
        for i in range(warmup + runs):
            order = [("this", BwrapSandbox), ("other", other)]
            for name, backend in order if i % 2 else order[::-1]:
                c0 = meter.seconds()
                s = await one_sandbox(base, f"{name}-{i}", backend)
                s["cpu"] = meter.seconds() - c0
                if i >= warmup:
                    samples[name].append(s)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {
        name: {k: [s[k] for s in v] for k in ("start", "exec", "stop", "total", "cpu")} for name, v in samples.items()
    }


def print_vs(vs: dict, src: Path) -> dict:
    t = Table(box=box.ASCII2, title=f"this tree vs {src}, alternating")
    for col in ("", "this p50 ms", "other p50 ms", "this min", "other min", "paired diff p50 ms", "this faster in"):
        t.add_column(col, justify="left" if not col else "right")
    out = {}
    for key in ("total", "start", "exec", "stop", "cpu"):
        a, b = vs["this"][key], vs["other"][key]
        diff = [x - y for x, y in zip(a, b)]
        t.add_row(
            key if key != "cpu" else "cpu ms",
            ms(pct(a, 50)),
            ms(pct(b, 50)),
            ms(min(a)),
            ms(min(b)),
            f"{pct(diff, 50) * 1e3:+.1f}",
            f"{sum(d < 0 for d in diff)}/{len(diff)}",
        )
        out[key] = {
            "this_p50_ms": pct(a, 50) * 1e3,
            "other_p50_ms": pct(b, 50) * 1e3,
            "paired_diff_p50_ms": pct(diff, 50) * 1e3,
        }
    console.print(t)
    return out


async def bench_plain(runs: int, warmup: int) -> list[float]:
    out = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec("true")
        rc = await proc.wait()
        dt = time.perf_counter() - t0
        if rc != 0:
            raise RuntimeError(f"plain `true` exited {rc}")
        if i >= warmup:
            out.append(dt)
    return out


# -- 2. trial throughput ---------------------------------------------------------------------------


def make_task(root: Path):
    path = write_task(
        root / "bench-echo",
        instruction="Write the line `hello from the oracle` to /app/answer.txt.\n",
        solve_sh=SOLVE_SH,
        test_sh=TEST_SH,
        dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\n",
    )
    return load_task(path)


async def bench_trials(task, builder: ImageBuilder, trials: int, concurrency: int, meter: CpuMeter) -> dict:
    sem = asyncio.Semaphore(concurrency)
    agent = OracleAgent()

    async def one():
        async with sem:
            return await run_trial(task, agent, builder)

    cpu0, mach0 = meter.seconds(), meter.machine_seconds()
    self0 = os.times()
    t0 = time.perf_counter()
    results = await asyncio.gather(*(one() for _ in range(trials)))
    wall = time.perf_counter() - t0
    cpu1, mach1 = meter.seconds(), meter.machine_seconds()
    self1 = os.times()
    host_cpu = (self1.user - self0.user) + (self1.system - self0.system)
    failed = [r for r in results if not r.passed]
    phases = {
        k: [getattr(r.timings, k) for r in results]
        for k in ("environment", "sandbox_start", "agent", "verifier", "total")
    }
    return {
        "concurrency": concurrency,
        "trials": trials,
        "wall_s": wall,
        "trials_per_s": trials / wall,
        "failed": len(failed),
        "failures": [
            {"outcome": r.outcome.value, "exception": r.exception, "verifier_stderr": r.verifier_stderr[-300:]}
            for r in failed[:5]
        ],
        "phase_p50_s": {k: statistics.median(v) for k, v in phases.items()},
        "trial_p90_s": pct(phases["total"], 90),
        # where the time goes when throughput stops scaling: CPU per trial, cores kept busy, and
        # this (host, event-loop) process's share of one core
        "cpu_s_per_trial": (cpu1 - cpu0) / trials,
        "cores_busy": (cpu1 - cpu0) / wall,
        "host_process_core_pct": 100.0 * host_cpu / wall,
        # the whole machine meanwhile: above cores_busy by other work (or, without cpuacct, equal)
        "machine_cores_busy": (mach1 - mach0) / wall,
    }


# -- main ------------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=100, help="sandbox start+exec+stop runs (default 100)")
    p.add_argument("--warmup", type=int, default=2, help="untimed sandbox runs first (default 2)")
    p.add_argument("--trials", type=int, default=64, help="oracle trials per concurrency level (default 64)")
    p.add_argument("--concurrency", default="1,8,32", help="comma-separated concurrency levels (default 1,8,32)")
    p.add_argument("--no-trials", action="store_true", help="only the sandbox lifecycle (part 1): quick paired runs")
    p.add_argument(
        "--vs-tree",
        type=Path,
        default=None,
        metavar="SRC",
        help="also time another tree's lifecycle (SRC: its src folder), alternating with this one's",
    )
    p.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the figures as JSON here")
    p.add_argument("--images", action="store_true", help="benchmark Debian-built images instead (section 3)")
    p.add_argument("--cold-base", action="store_true", help="with --images: also time a cold mmdebstrap base")
    args = p.parse_args(argv)
    try:
        args.levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    except ValueError:
        p.error(f"--concurrency: not a comma-separated list of integers: {args.concurrency!r}")
    if args.runs < 1 or args.trials < 1 or not args.levels or min(args.levels) < 1:
        p.error("--runs, --trials and every concurrency level must be >= 1")
    return args


async def bench_images(args) -> int:
    """Section 3: Debian-built images: build times cold and cached, trial start host vs Debian."""
    import uuid

    from trial_fs import one_start  # benchmarks/ is on sys.path when a script here runs

    from agentmill.images.layers import LayerStore, remove_tree

    report: dict = {"machine": {"cpus": os.cpu_count(), "kernel": platform.release()}}
    root = bench_dir()
    rows = []
    if args.cold_base:
        private = root / "layers-cold"
        remove_tree(private)
        t = time.perf_counter()
        await ImageBuilder(cache=root / "cache-cold", mode="debian", layers=private).get(
            _image_task(root, "cold", "true")
        )
        rows.append(("base + 1 step, cold (mmdebstrap included)", time.perf_counter() - t))
        remove_tree(private)
    nonce = uuid.uuid4().hex[:8]
    task = _image_task(root, "steps", nonce)
    builder = ImageBuilder(cache=root / "cache", mode="debian")
    t = time.perf_counter()
    image = await builder.get(task)
    rows.append(("Dockerfile, 3 new layers over a cached base", time.perf_counter() - t))
    t = time.perf_counter()
    await ImageBuilder(cache=root / "cache2", mode="debian").get(task)
    rows.append(("same Dockerfile, every layer cached (new image cache)", time.perf_counter() - t))
    t = time.perf_counter()
    await builder.get(task)
    rows.append(("same image, image cache hit", time.perf_counter() - t))
    host_image = await ImageBuilder(cache=root / "cache-host").get(_image_task(root, "host", "host", debian=False))
    big_image = await ImageBuilder(cache=root / "cache-host").get(_image_task(root, "big", "big", debian=False))

    async def start(img) -> float:
        return await one_start(img, root)

    import dataclasses

    starts = {}
    for name, img in (
        ("host userland", host_image),
        ("Debian-built", image),
        ("host userland, 20,000-file /app", big_image),
    ):
        for how, overlay in (("copy", False), ("overlay", True)):
            variant = dataclasses.replace(img, overlay=overlay)
            await start(variant)
            starts[f"{name} ({how})"] = [await start(variant) for _ in range(args.runs)]
    t = Table(box=box.ASCII2)
    t.add_column("build")
    t.add_column("seconds", justify="right")
    for what, secs in rows:
        t.add_row(what, f"{secs:.2f}")
    console.print(t)
    t = Table(box=box.ASCII2)
    for col in ("trial start (copy or overlay + sandbox start + exec)", "p50 ms", "p90 ms"):
        t.add_column(col)
    for name, vals in starts.items():
        t.add_row(name, ms(pct(vals, 50)), ms(pct(vals, 90)))
    console.print(t)
    workspace = sum(f.stat().st_size for f in image.rootfs.rglob("*") if f.is_file() and not f.is_symlink())
    console.print(
        f"Debian image: {len(image.layers)} layers, workspace template {workspace / 1e6:.1f} MB "
        f"(system dirs are mounted read-only, not copied)"
    )
    report.update(
        builds={w: round(s, 3) for w, s in rows},
        trial_start_ms={n: {"p50": pct(v, 50) * 1000, "p90": pct(v, 90) * 1000} for n, v in starts.items()},
    )
    for key in image.layers[1:]:  # this run's unique layers
        LayerStore().remove(key)
    remove_tree(root)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
    return 0


def _image_task(root: Path, name: str, nonce: str, debian: bool = True):
    df = (
        (
            f"FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo {nonce} > /app/stamp\n"
            "RUN mkdir -p /app/data && seq 1 1000 > /app/data/n.txt\nRUN useradd -m worker\n"
        )
        if debian
        else "FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo host > /app/stamp\n"
    )
    if name == "cold":
        df = "FROM debian:bookworm-slim\nRUN true\n"
    if name == "big":  # a task that ships a data set: what a copy costs per trial
        df += (
            "RUN mkdir -p /app/d && python3 -c \"[open(f'/app/d/f{i}', 'w').write('x' * 1000) "
            'for i in range(20000)]"\n'
        )
    path = root / "tasks" / name
    shutil.rmtree(path, ignore_errors=True)
    return load_task(
        write_task(
            path,
            instruction="x",
            test_sh="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
            solve_sh="true\n",
            dockerfile=df,
        )
    )


async def main(args) -> int:
    if args.images:
        return await bench_images(args)
    reaps = ReapCounter()
    logging.getLogger("asyncio").addFilter(reaps)
    meter = CpuMeter()
    try:
        return await run(args, meter, reaps)
    finally:
        meter.close()


async def run(args, meter: CpuMeter, reaps: ReapCounter) -> int:
    report: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "bwrap": shutil.which("bwrap"),
            "euid": os.geteuid(),
        },
        "args": {"runs": args.runs, "warmup": args.warmup, "trials": args.trials, "concurrency": args.levels},
        "cpu_scope": meter.scope,
    }
    ok = True
    started = time.perf_counter()

    # 1. sandbox lifecycle vs plain subprocess
    console.print(f"[bold]1. sandbox start+exec+stop[/] ({args.runs} runs, {args.warmup} warm-up, sequential)")
    c0 = meter.seconds()
    sb = await bench_sandbox(args.runs, args.warmup)
    c1 = meter.seconds()
    plain = await bench_plain(args.runs, args.warmup)
    c2 = meter.seconds()
    sb_cpu = (c1 - c0) / (args.runs + args.warmup)
    plain_cpu = (c2 - c1) / (args.runs + args.warmup)
    t = Table(box=box.ASCII2)
    for col in ("", "p50 ms", "p90 ms", "min ms", "max ms"):
        t.add_column(col, justify="left" if not col else "right")
    for label, vals in (
        ("bwrap: start+exec+stop", sb["total"]),
        ("  start", sb["start"]),
        ("  exec `true`", sb["exec"]),
        ("  stop", sb["stop"]),
        ("plain subprocess `true`", plain),
    ):
        t.add_row(label, ms(pct(vals, 50)), ms(pct(vals, 90)), ms(min(vals)), ms(max(vals)))
    console.print(t)
    ratio = pct(sb["total"], 50) / pct(plain, 50)
    console.print(
        f"bwrap sandbox p50 is {ratio:.0f}x a plain subprocess; CPU per run: sandbox {sb_cpu * 1e3:.0f} ms, "
        f"plain {plain_cpu * 1e3:.1f} ms ({meter.scope}).\n"
    )
    report["sandbox"] = {k: {"p50_ms": pct(v, 50) * 1e3, "p90_ms": pct(v, 90) * 1e3} for k, v in sb.items()}
    report["sandbox"]["cpu_ms_per_run"] = sb_cpu * 1e3
    report["plain_subprocess"] = {
        "p50_ms": pct(plain, 50) * 1e3,
        "p90_ms": pct(plain, 90) * 1e3,
        "cpu_ms_per_run": plain_cpu * 1e3,
    }

    if args.vs_tree is not None:
        other, guest = other_tree_backend(args.vs_tree.resolve())
        try:
            console.print(f"[bold]1b. this tree and {args.vs_tree} alternating[/] ({args.runs} rounds)")
            report["vs_tree"] = print_vs(await bench_vs(args.runs, args.warmup, other, meter), args.vs_tree)
        finally:
            shutil.rmtree(guest, ignore_errors=True)

    if args.no_trials:
        report["total_wall_s"] = time.perf_counter() - started
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2))
        return 0

    # 2. trials per second
    console.print(f"[bold]2. oracle trials per second[/] ({args.trials} trials per level, tiny task)")
    task_root = Path(tempfile.mkdtemp(prefix="agentmill-bench-task-"))
    levels = []
    try:
        task = make_task(task_root)
        builder = ImageBuilder()
        t0 = time.perf_counter()
        image = await builder.get(task)  # warm the image cache: the timed trials all hit it
        warm_s = time.perf_counter() - t0
        warm = await run_trial(task, OracleAgent(), builder)  # one untimed trial: fail fast if broken
        console.print(
            f"image {image.key[:12]} ready in {warm_s:.2f}s; warm-up trial: {warm.outcome.value} "
            f"({warm.timings.total * 1e3:.0f} ms)"
        )
        if not warm.passed:
            console.print(f"[red]warm-up trial did not pass:[/] {warm.exception} {warm.verifier_stderr[-300:]}")
            ok = False
        for c in args.levels:
            r = await bench_trials(task, builder, args.trials, c, meter)
            levels.append(r)
            if r["failed"]:
                ok = False
    finally:
        shutil.rmtree(task_root, ignore_errors=True)

    t = Table(box=box.ASCII2)
    for col in (
        "conc.",
        "trials",
        "wall s",
        "trials/s",
        "not passed",
        "p50 ms",
        "p90 ms",
        "cpu ms/trial",
        "cores busy",
        "machine",
        "host proc",
    ):
        t.add_column(col, justify="right")
    for r in levels:
        t.add_row(
            str(r["concurrency"]),
            str(r["trials"]),
            f"{r['wall_s']:.2f}",
            f"{r['trials_per_s']:.2f}",
            str(r["failed"]),
            ms(r["phase_p50_s"]["total"]),
            ms(r["trial_p90_s"]),
            f"{r['cpu_s_per_trial'] * 1e3:.0f}",
            f"{r['cores_busy']:.2f}",
            f"{r['machine_cores_busy']:.2f}",
            f"{r['host_process_core_pct']:.0f}%",
        )
    console.print(t)
    t = Table(box=box.ASCII2, title="per-trial phase p50 (ms)")
    for col in ("conc.", "image", "agent sandbox start", "agent (solve.sh)", "verifier", "total"):
        t.add_column(col, justify="right")
    for r in levels:
        ph = r["phase_p50_s"]
        t.add_row(
            str(r["concurrency"]),
            ms(ph["environment"]),
            ms(ph["sandbox_start"]),
            ms(ph["agent"]),
            ms(ph["verifier"]),
            ms(ph["total"]),
        )
    console.print(t)
    console.print(
        f"p50/p90 = one trial's latency; cpu ms/trial and cores busy count {meter.scope}; "
        "machine = cores busy machine-wide (other work, kernel threads); "
        "host proc = this process alone (event loop, guest RPC, file staging) as a share of one core."
    )
    console.print(
        "image = cache lookup; verifier = fresh sandbox start + test.sh + reward read + stop; "
        "total also covers the rootfs copy, the agent sandbox's stop and scratch cleanup."
    )
    others = max((r["machine_cores_busy"] - r["cores_busy"] for r in levels), default=0.0)
    if meter.path is not None and others > 0.25:
        console.print(
            f"[yellow]warning:[/] other work kept up to {others:.2f} cores busy during the trials: "
            "throughput and latencies are understated; rerun on a quiet machine."
        )
    for r in levels:
        for f in r["failures"]:
            console.print(f"[red]concurrency {r['concurrency']}: not passed:[/] {f}")
    report["trials"] = levels
    report["total_wall_s"] = time.perf_counter() - started
    report["asyncio_unknown_child_warnings"] = reaps.count
    if reaps.count:
        console.print(
            f"note: asyncio logged 'Unknown child process pid ..., will report returncode 255' "
            f"{reaps.count} time(s): a sandbox process reaped behind the child watcher in stop()."
        )
    console.print(
        f"\ntotal benchmark time {report['total_wall_s']:.1f}s; "
        + ("all trials passed" if ok else "[red]SOME TRIALS DID NOT PASS[/]")
    )

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
