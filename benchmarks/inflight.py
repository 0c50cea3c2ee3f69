"""Hundreds of episodes in flight: N concurrent terminus trials against a scripted model that takes
`--delay` seconds per reply (default 256 trials, 2 s), each `--commands` shell commands then the
completion claim and its confirmation, every trial a full isolated trial through `run_rollout`.

    .venv/bin/python benchmarks/inflight.py [--episodes 256] [--delay 2] [--commands 3] [--workers N] [--cold] [--json PATH]

Printed: wall time of the N concurrent trials against two ideals. First, one trial's time alone,
measured first with the same slow model (its model turns x delay plus its sandbox and verifier
time). Second, the issue's formula, model turns x delay plus sandbox time, with the sandbox time of
all N measured: the same N trials at once with an agent that does nothing (environment, sandbox
start and stop, verifier; no terminal, no model). On a few cores N sandboxes take far longer than
one; only each episode's first model call can overlap its sandbox's start (the first turn asked
ahead, docs/terminal.md; AGENTMILL_ASK_AHEAD=0 to compare without; the untimed warm-up trials have
shown the image's first screen, so every episode can ask ahead at once, and --cold forgets it first,
as a fresh process starts). Then when the last episode's
terminal was up and the CPU used by then (the start work every episode must wait for), how many
first turns were asked ahead (hit, miss), the
event loop's lag (p50/p99/max of a 20 ms timer: time the loop was blocked), where the slowest
trial's time went (setup and teardown, agent, verifier, against the trial alone), the peak number of
trials alive at once, and memory per live episode (the machine's MemAvailable drop at the peak,
which counts each episode's sandbox processes too, divided by the peak number alive; and this
process's own RSS growth, divided the same way). CPU is counted as in benchmarks/rollout.py.
Exits non-zero unless every trial passed. Run it as root, like agentmill itself.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import logging
import os
import resource
import shutil
import sys
import threading
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the workers of --workers unpickle loop_probe's wrapper, so they need this folder on their path too
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [sys.path[0], os.environ.get("PYTHONPATH")]))

import rollout as rb  # noqa: E402  benchmarks/rollout.py: endpoint, meters, monitors
from loop_probe import ProbedProcesses, worker_lags  # noqa: E402

from agentmill.agents.base import ScriptedAgentBase  # noqa: E402
from agentmill.agents.terminus.first_screen import FIRST_SCREENS  # noqa: E402
from agentmill.images import ImageBuilder  # noqa: E402
from agentmill.rollout.runner import run_rollout  # noqa: E402
from agentmill.rollout.trial import run_trial  # noqa: E402
from agentmill.sandbox.tmux import TmuxSession  # noqa: E402
from tests.helpers.chat_server import Reply, terminus_json  # noqa: E402


def slow_policy(request, *, delay: float, commands: int) -> Reply:
    """Every reply after `delay` s (the server answers concurrently, one thread per request)."""
    done = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if done < commands:
        keys = rb.ECHO if done == commands - 1 else f"echo working-{done} > /tmp/w{done}\n"
        return Reply(terminus_json([(keys, 0)]), delay=delay)
    return Reply(terminus_json([], complete=True), delay=delay)


class SandboxOnly(ScriptedAgentBase):
    """A trial's sandbox work and nothing else: its environment, a started sandbox (as terminus
    gets), its stop and the verifier; no terminal, no model."""

    name = "sandbox-only"

    async def run(self, task, sandbox, result) -> None:
        return None


async def sandbox_time(tasks, builder) -> float:
    """Seconds this machine needs for the sandboxes of `tasks` all at once: the issue's "sandbox
    time" for N episodes, which on a few cores is not one sandbox's time."""
    t = time.monotonic()
    await asyncio.gather(*(run_trial(task, SandboxOnly(), builder) for task in tasks))
    return time.monotonic() - t


class Stalls:
    """What the event loop was doing while it was late: a watchdog thread looks every 10 ms; when the
    loop's heartbeat is over 100 ms old it records where the loop's thread is (its innermost frames
    in agentmill, asyncio or selectors). Stuck in `select`/`epoll` means the thread was runnable but
    not given a CPU (the machine was oversubscribed); anything else is work blocking the loop."""

    def __init__(self):
        self.beat = time.monotonic()
        self.where: collections.Counter = collections.Counter()
        self._stop = threading.Event()
        self._loop_thread = threading.get_ident()

    async def heartbeat(self):
        while True:
            self.beat = time.monotonic()
            await asyncio.sleep(0.005)

    def _watch(self):
        while not self._stop.wait(0.01):
            if time.monotonic() - self.beat > 0.1:
                frame = sys._current_frames().get(self._loop_thread)
                if frame is not None:
                    stack = traceback.extract_stack(frame)
                    ours = [f for f in stack if "/agentmill/" in f.filename and "/benchmarks/" not in f.filename]
                    inner = " <- ".join(f"{Path(f.filename).name}:{f.name}" for f in reversed(stack[-2:]))
                    mine = f"{Path(ours[-1].filename).name}:{ours[-1].lineno} {ours[-1].name}" if ours else "-"
                    self.where[f"{inner}  [in {mine}]"] += 1

    def __enter__(self):
        self._task = asyncio.get_running_loop().create_task(self.heartbeat())
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._task.cancel()
        self._thread.join()


async def batch(
    base: Path, name: str, tasks, endpoint, meter, builder, *, turns: int, workers: int = 0, watch_rss: bool = False
) -> dict:
    run_dir = base / name
    config = rb.level_config(tasks, base, len(tasks), endpoint.base_url, 4096).model_copy(
        update={"max_turns": turns + 5}
    )
    client, chat = rb.timed_client(endpoint.base_url, 4096)
    first_asks: list[tuple[float, float]] = []  # each episode's first request: when, and the CPU used by then
    timed = client.chat

    async def chat_noting_first(messages, *args, **kw):
        if not any(m.get("role") == "assistant" for m in messages):
            first_asks.append((time.monotonic() - t0, meter.seconds() - cpu0))
        return await timed(messages, *args, **kw)

    client.chat = chat_noting_first
    terminals_up: list[tuple[float, float]] = []  # each episode's terminal up (its sandbox ready): when, CPU by then
    tmux_start = TmuxSession.start

    async def start_noting(self, *args, **kw):
        await tmux_start(self, *args, **kw)
        terminals_up.append((time.monotonic() - t0, meter.seconds() - cpu0))

    TmuxSession.start = start_noting
    alive = {"now": 0, "peak": 0}
    began: dict[str, float] = {}
    spans: list[dict] = []  # per trial: when it began and ended (s from the batch's start), its phases
    t0, cpu0 = time.monotonic(), meter.seconds()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    probes = base / f"{name}-worker-lags"  # each worker's loop lag (loop_probe.py), with --workers
    if workers:
        probes.mkdir(parents=True, exist_ok=True)

    def started(plan):
        began[plan.trial_id] = time.monotonic() - t0
        alive["now"] += 1
        alive["peak"] = max(alive["peak"], alive["now"])

    def finished(result):
        alive["now"] -= 1
        end, t = time.monotonic() - t0, result.timings
        spans.append(
            {
                "begin": began.get(result.trial_id, 0.0),
                "end": end,
                "setup_teardown": t.total - t.agent - t.verifier,
                "agent": t.agent,
                "verifier": t.verifier,
                "environment": t.environment,
                "sandbox_start": t.sandbox_start,
                "rest": t.total - t.agent - t.verifier - t.environment - t.sandbox_start,
            }
        )

    try:
        with rb.Monitor() as mon, rb.CpuWindow(endpoint, meter) as cpu, Stalls() as stalls:
            executor = ProbedProcesses(len(tasks), workers=workers, out=probes) if workers else None
            report = await run_rollout(
                config,
                tasks,
                run_dir,
                client=client,
                builder=builder,
                executor=executor,
                on_start=started,
                on_done=finished,
                keep_results=True,
            )
    finally:
        TmuxSession.start = tmux_start
        await client.close()
    results = report.results
    ahead = collections.Counter(
        r.agent_metadata.get("terminus", {}).get("first_turn_ahead", "not asked") for r in results
    )
    bad = [r for r in results if not r.passed]
    await asyncio.to_thread(shutil.rmtree, run_dir, True)
    peak = max(alive["peak"], 1)
    summary = mon.summary()
    return {
        "episodes": report.ran,
        "wall_s": cpu.wall,
        "peak_alive": alive["peak"],
        "trial_s_p50": rb.pct([r.timings.total for r in results], 50),
        "trial_s_max": max((r.timings.total for r in results), default=0.0),
        "sandbox_start_s_p50": rb.pct([r.timings.sandbox_start for r in results], 50),
        "verifier_s_p50": rb.pct([r.timings.verifier for r in results], 50),
        "agent_s_p50": rb.pct([r.timings.agent for r in results], 50),
        "model_calls": len(chat.samples),
        "model_retries": client.stats.retries,
        "cpu_s": cpu.ours,
        "cores_busy": cpu.ours / cpu.wall,
        "machine_cores_busy": cpu.machine / cpu.wall,
        "host_cpu_s": cpu.host,
        "server_cpu_s": cpu.server,
        "mem_per_episode_mib": summary["machine_mem_used_peak_mib"] / peak,
        "host_rss_growth_per_episode_kib": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / peak
        if watch_rss
        else None,
        "slowest": max(spans, key=lambda x: x["end"], default=None),
        "spans": spans,
        "last_first_ask_s": max(first_asks, default=(0.0, 0.0))[0],
        "cpu_by_last_first_ask_s": max(first_asks, default=(0.0, 0.0))[1],
        "last_terminal_up_s": max(terminals_up, default=(0.0, 0.0))[0],
        "cpu_by_last_terminal_up_s": max(terminals_up, default=(0.0, 0.0))[1],
        "first_turn_ahead": dict(ahead),
        "setup_s_p50": rb.pct([x["setup_teardown"] for x in spans], 50),
        "setup_s_max": max((x["setup_teardown"] for x in spans), default=0.0),
        "agent_s_max": max((x["agent"] for x in spans), default=0.0),
        "verifier_s_max": max((x["verifier"] for x in spans), default=0.0),
        "stalls_10ms_samples": dict(stalls.where.most_common(8)),
        "not_passed": len(bad) + (len(tasks) - report.ran),
        "failures": [{"task": r.task, "outcome": r.outcome.value, "exception": r.exception} for r in bad[:3]],
        **summary,
        **(worker_lags(probes) if workers else {}),
    }


async def run(args, endpoint, meter) -> int:
    base = rb.bench_dir()
    builder = ImageBuilder()
    try:
        tasks = await asyncio.to_thread(
            lambda: [
                rb.make_task(base / "tasks", f"fly-{i:04d}", f"Write the word hello into /app/out.txt. (episode {i})\n")
                for i in range(args.episodes + 2)
            ]
        )
        await builder.get(tasks[0])
        await batch(
            base, "warm", tasks[:1], endpoint, meter, builder, turns=args.commands + 2
        )  # untimed: imports, toolkit, caches
        alone = await batch(base, "alone", tasks[1:2], endpoint, meter, builder, turns=args.commands + 2)
        ideal = alone["trial_s_p50"]
        rb.console.print(
            f"one episode alone: {ideal:.2f} s ({args.commands + 2} replies x {args.delay:g} s = "
            f"{(args.commands + 2) * args.delay:.1f} s of model time; agent {alone['agent_s_p50']:.2f} s, sandbox start "
            f"{alone['sandbox_start_s_p50'] * 1e3:.0f} ms, verifier {alone['verifier_s_p50'] * 1e3:.0f} ms)"
        )
        sandboxes = await sandbox_time(tasks[2:], builder)
        model_time = (args.commands + 2) * args.delay
        rb.console.print(
            f"the sandboxes alone, {args.episodes} at once (start, stop, verifier; no terminal, no model): "
            f"{sandboxes:.2f} s"
        )
        if args.cold:  # as a fresh process starts: no first screen learnt from the untimed runs
            FIRST_SCREENS.clear()
        many = await batch(
            base,
            "many",
            tasks[2:],
            endpoint,
            meter,
            builder,
            turns=args.commands + 2,
            workers=args.workers,
            watch_rss=True,
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    many["ideal_s"] = ideal
    many["wall_over_ideal"] = many["wall_s"] / ideal
    # the formula, turns x delay plus sandbox time, with the sandbox time of all N measured
    many["sandbox_s"] = sandboxes
    many["ideal_n_s"] = model_time + sandboxes
    many["wall_over_ideal_n"] = many["wall_s"] / many["ideal_n_s"]
    cpu_floor = many["cpu_s"] / max(1, rb.os.cpu_count() or 1)
    rb.console.print(
        f"{many['episodes']} episodes at once (peak {many['peak_alive']} alive): wall {many['wall_s']:.2f} s = "
        f"[bold]{100 * (many['wall_over_ideal'] - 1):+.0f}%[/] over the ideal {ideal:.2f} s; slowest trial "
        f"{many['trial_s_max']:.2f} s; event-loop lag p50/p99/max {many['loop_lag_p50_ms']:.0f} / "
        f"[bold]{many['loop_lag_p99_ms']:.0f}[/] / {many['loop_lag_max_ms']:.0f} ms; memory per live episode "
        f"{many['mem_per_episode_mib']:.1f} MiB (machine), this process {many['host_rss_growth_per_episode_kib']:.0f} KiB; "
        f"CPU {many['cpu_s']:.1f} s ({many['cpu_s'] / max(many['episodes'], 1) * 1e3:.0f} ms per episode; on "
        f"{rb.os.cpu_count()} cores at least {cpu_floor:.1f} s of wall; this process {many['host_cpu_s']:.1f} s, the "
        f"scripted server {many['server_cpu_s']:.1f} s), cores busy {many['cores_busy']:.2f} "
        f"(machine {many['machine_cores_busy']:.2f}); {many['model_retries']} model retries; "
        f"{many['not_passed']} not passed"
    )
    rb.console.print(
        f"against model time plus the sandbox time of all {many['episodes']} ({model_time:.1f} + "
        f"{sandboxes:.2f} = {many['ideal_n_s']:.2f} s): [bold]{100 * (many['wall_over_ideal_n'] - 1):+.1f}%[/]"
    )
    if args.workers:
        each = ", ".join(f"{x:.0f}" for x in many["worker_loop_lag_p99_each_ms"])
        rb.console.print(
            f"the {args.workers} workers' loops: lag p50/p99/max {many['worker_loop_lag_p50_ms']:.0f} / "
            f"[bold]{many['worker_loop_lag_p99_ms']:.0f}[/] / {many['worker_loop_lag_max_ms']:.0f} ms "
            f"(all samples pooled; p99 of each: {each} ms); the line above is the driver's loop"
        )
    sl = many["slowest"]
    rb.console.print(
        f"where the wall went (s): slowest trial began at {sl['begin']:.2f}, its setup and teardown {sl['setup_teardown']:.2f} "
        f"(image {sl['environment']:.2f}, sandbox start {sl['sandbox_start']:.2f}, the rest {sl['rest']:.2f}) "
        f"(alone {alone['slowest']['setup_teardown']:.2f}), agent {sl['agent']:.2f} (alone {alone['agent_s_p50']:.2f}), verifier "
        f"{sl['verifier']:.2f} (alone {alone['verifier_s_p50']:.2f}); over all trials: setup+teardown p50/max "
        f"{many['setup_s_p50']:.2f}/{many['setup_s_max']:.2f}, agent p50/max {many['agent_s_p50']:.2f}/"
        f"{many['agent_s_max']:.2f}, verifier p50/max {many['verifier_s_p50']:.2f}/{many['verifier_s_max']:.2f}"
    )
    ask, up, used = many["last_first_ask_s"], many["last_terminal_up_s"], many["cpu_by_last_terminal_up_s"]
    if up:  # seen where the agents run in this process (not with --workers)
        rb.console.print(
            f"the last episode's terminal was up at {up:.2f} s (the last first request went out at {ask:.2f} s); by "
            f"then the run had used {used:.1f} s of CPU ({used / max(many['episodes'], 1) * 1e3:.0f} ms per episode), "
            f"{used / max(1, rb.os.cpu_count() or 1):.2f} s of {rb.os.cpu_count()} cores (every episode's start work, "
            f"and the turns begun meanwhile); first turns asked while the sandbox started: "
            + ", ".join(f"{n} {k}" for k, n in sorted(many["first_turn_ahead"].items()))
        )
    if many["stalls_10ms_samples"]:
        rb.console.print("where the event loop's thread was while the loop was over 100 ms late (10 ms samples):")
        for where, n in many["stalls_10ms_samples"].items():
            rb.console.print(f"  {n:5d}  {where}", markup=False)
    if meter.path is not None and many["machine_cores_busy"] - many["cores_busy"] > 0.25:
        rb.console.print("[yellow]warning:[/] other work was running: figures understated")
    for f in many["failures"]:
        rb.console.print(f"[red]not passed:[/] {f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "alone": alone, "many": many}, indent=2, default=str
            )
        )
    return 0 if many["not_passed"] == 0 and alone["not_passed"] == 0 else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=256, help="concurrent trials (default 256)")
    p.add_argument("--delay", type=float, default=2.0, help="seconds the model takes per reply (default 2)")
    p.add_argument("--commands", type=int, default=3, help="shell commands per episode before completion (default 3)")
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        help="run the episodes on this many worker processes (the processes executor; default 0: "
        "this process's event loop alone)",
    )
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument(
        "--cold",
        action="store_true",
        help="forget the terminal's first screen learnt by the untimed runs before the N at once",
    )
    args = p.parse_args()
    if args.episodes < 1 or args.delay < 0 or args.commands < 1:
        p.error("--episodes and --commands must be >= 1, --delay >= 0")
    logging.getLogger("asyncio").addFilter(rb.ReapCounter())
    meter = rb.CpuMeter()
    policy = functools.partial(slow_policy, delay=args.delay, commands=args.commands)
    try:
        with rb.Endpoint("process", policy=policy) as endpoint:
            return asyncio.run(run(args, endpoint, meter))
    finally:
        meter.close()


if __name__ == "__main__":
    sys.exit(main())
