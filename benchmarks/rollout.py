#!/usr/bin/env python3
"""Rollout harness benchmark for agentmill: the terminus agent against a scripted model server.

The model is the test suite's ChatServer (tests/helpers/chat_server.py): a real local HTTP server
speaking chat-completions, answering instantly from a script. So every figure here is agentmill's
own cost (HTTP client, tmux in the sandbox, sandboxes, verifier, run folder), no model time.

Two measurements:

1. Harness overhead per agent turn: one terminus trial whose model answers --turns turns, each
   with one instant command (`true`, duration 0), then claims completion and confirms. Reported:
   agent time / model turns, split into the ModelClient.chat round trip, the tmux commands
   (send-keys, capture-pane, session start, the control channel's opening: over the channel, or by
   client exec with AGENTMILL_TMUX_CHANNEL=0) and the rest (agent-side Python). Both are timed by
   wrapping, at run time, ModelClient.chat and TmuxSession._run; the package is not changed.
   Repeated --repeats times; the median is reported.
2. Trials per second: full terminus trials through run_rollout (ledger, trial folders, fsyncs),
   into a fresh run folder per concurrency level, 3 turns each (type `echo hello > /app/out.txt`,
   complete, confirm) on small distinct tasks that pass with that output. Every trial is checked
   to have passed.

Usage: .venv/bin/python benchmarks/rollout.py [--turns 30] [--repeats 5] [--concurrency 1,32,256]
                                              [--min-trials 16] [--max-trials 512]
                                              [--model-concurrency 1024] [--server process|thread]
                                              [--keep-nagle] [--json PATH]
Exits non-zero if any trial did not pass. Needs bubblewrap, util-linux, tmux and the host python3
that the sandboxes use; run as root, like agentmill itself.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import multiprocessing
import os
import platform
import re
import resource
import shutil
import socket
import socketserver
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # for tests.helpers.chat_server

from rich import box  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agentmill.agents.base import AgentResult  # noqa: E402
from agentmill.agents.terminus import TerminusAgent  # noqa: E402
from agentmill.images import ImageBuilder  # noqa: E402
from agentmill.models.client import ModelClient, SamplingParams  # noqa: E402
from agentmill.rollout.config import RolloutConfig  # noqa: E402
from agentmill.rollout.runner import run_rollout  # noqa: E402
from agentmill.rollout.trial import run_trial  # noqa: E402
from agentmill.runtime.paths import scratch_dir  # noqa: E402
from agentmill.sandbox.tmux import TmuxSession  # noqa: E402
from agentmill.tasks import load_task, write_task  # noqa: E402
from tests.helpers.chat_server import ChatServer, Reply, terminus_json  # noqa: E402

console = Console(highlight=False, width=max(shutil.get_terminal_size((110, 24)).columns, 110))

MODEL = "scripted"
TURNS_TAG = "BENCH-TURNS="
ECHO = "echo hello > /app/out.txt\n"
TEST_SH = (
    "#!/bin/bash\nif grep -qx hello /app/out.txt; then echo 1 > /logs/verifier/reward.txt; "
    "else echo 0 > /logs/verifier/reward.txt; fi\n"
)


# -- the scripted model --------------------------------------------------------------------------


def bench_policy(request) -> Reply:
    """Instant replies. A task whose instruction says BENCH-TURNS=N gets N turns of `true` (duration 0),
    any other task one turn typing ECHO with a duration of 1 s (an upper bound: the wait ends when
    the prompt is back; with 0 the trial could end, the sandbox with it, before the shell ran it);
    then a completion claim, then its confirmation."""
    msgs = request["messages"]
    first_user = next(m["content"] for m in msgs if m["role"] == "user")
    turns = sum(1 for m in msgs if m["role"] == "assistant")
    m = re.search(TURNS_TAG + r"(\d+)", first_user)
    n, keys, duration = (int(m.group(1)), "true\n", 0) if m else (1, ECHO, 1.0)
    if turns < n:
        return Reply(terminus_json([(keys, duration)]))
    return Reply(terminus_json([], complete=True))


def tune_server(keep_nagle: bool) -> None:
    """Two limits of the stdlib HTTP server under ChatServer, not of agentmill; lifted here (in the
    server's process only, or in ours with --server thread), as a real endpoint (uvicorn...) would:
    - it writes the headers and the body of a reply in two sends without TCP_NODELAY, so Nagle waits
      for the client's delayed ACK: about 40 ms on every request (keep it with --keep-nagle);
    - its listen backlog is 5: 256 agents connecting at once would have SYNs dropped, retried after 1 s.
    """
    socketserver.StreamRequestHandler.disable_nagle_algorithm = not keep_nagle
    socketserver.TCPServer.request_queue_size = 1024


def _serve(conn, keep_nagle: bool, policy=bench_policy) -> None:
    """Child process: the ChatServer, on its own GIL and core share, like a real endpoint."""
    tune_server(keep_nagle)
    with ChatServer(policy, model=MODEL) as srv:
        conn.send(srv.base_url)
        conn.recv()  # until told to stop
        conn.send(len(srv.requests))


class Endpoint:
    """The scripted server, in a forked child process (default) or a thread of this process."""

    def __init__(self, mode: str, keep_nagle: bool = False, policy=bench_policy):
        self.mode, self.keep_nagle, self.policy = mode, keep_nagle, policy
        self.proc = self.conn = self.server = None
        self.base_url = ""

    def __enter__(self) -> Endpoint:
        if self.mode == "thread":
            tune_server(self.keep_nagle)
            self.server = ChatServer(self.policy, model=MODEL).__enter__()
            self.base_url = self.server.base_url
        else:
            ctx = multiprocessing.get_context("fork")  # before any thread or event loop exists
            self.conn, child = ctx.Pipe()
            self.proc = ctx.Process(
                target=_serve, args=(child, self.keep_nagle, self.policy), daemon=True, name="chat-server"
            )
            self.proc.start()
            if not self.conn.poll(30):
                raise RuntimeError("the scripted chat server did not start")
            self.base_url = self.conn.recv()
        return self

    def cpu_seconds(self) -> float:
        """CPU of the server process; 0 in thread mode (it is counted in this process's)."""
        if self.proc is None:
            return 0.0
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc) -> None:
        if self.server is not None:
            self.server.__exit__(None, None, None)
        if self.proc is not None:
            with contextlib.suppress(OSError, EOFError):
                self.conn.send("stop")
                self.conn.poll(5) and self.conn.recv()
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()


# -- instruments ---------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Percentile by linear interpolation (q in 0..100)."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


class Timer:
    """Accumulates durations of calls to an async callable."""

    def __init__(self):
        self.samples: list[float] = []
        self.last_call: tuple = ((), {})

    def reset(self) -> None:
        self.samples = []

    @property
    def total(self) -> float:
        return sum(self.samples)

    def wrap(self, fn):
        async def timed(*args, **kw):
            self.last_call = (args, kw)
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kw)
            finally:
                self.samples.append(time.perf_counter() - t0)

        return timed


TMUX = Timer()


TRANSPORTS: collections.Counter = collections.Counter()


def instrument_tmux() -> None:
    """Time every tmux command from this process (send-keys, capture-pane, new-session...), over the
    control channel or by client exec, and the channel's opening; count the sessions by transport."""
    TmuxSession._run = TMUX.wrap(TmuxSession._run)
    if hasattr(TmuxSession, "_open_channel"):  # absent in trees before the channel (paired "before" runs)
        TmuxSession._open_channel = TMUX.wrap(TmuxSession._open_channel)
    start = TmuxSession.start

    async def counted_start(self):
        await start(self)
        TRANSPORTS[getattr(self, "transport", "exec")] += 1

    TmuxSession.start = counted_start


def timed_client(base_url: str, max_concurrency: int) -> tuple[ModelClient, Timer]:
    client = ModelClient(
        base_url=base_url,
        model=MODEL,
        sampling=SamplingParams(temperature=0),
        max_retries=2,
        backoff_base=0.05,
        max_concurrency=max_concurrency,
    )
    timer = Timer()
    client.chat = timer.wrap(client.chat)  # the agent calls self.client.chat: this instance attribute
    return client, timer


class ReapCounter(logging.Filter):
    """Counts (and keeps out of the tables) asyncio's 'Unknown child process pid N' warnings."""

    count = 0

    def filter(self, record):
        if "Unknown child process pid" in record.getMessage():
            self.count += 1
            return False
        return True


def machine_cpu_seconds() -> float:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def mem_available_mib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Monitor:
    """While a measurement runs: event-loop lag (how late a 20 ms sleep wakes: time the loop was
    blocked by synchronous work) and the machine's lowest MemAvailable."""

    PERIOD = 0.02

    def __init__(self):
        self.lags: list[float] = []
        self.mem_before = mem_available_mib()
        self.mem_min = self.mem_before
        self._task: asyncio.Task | None = None

    async def _run(self):
        n = 0
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(self.PERIOD)
            self.lags.append(max(0.0, time.perf_counter() - t0 - self.PERIOD))
            n += 1
            if n % 5 == 0:
                self.mem_min = min(self.mem_min, mem_available_mib())

    def __enter__(self) -> Monitor:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc) -> None:
        self._task.cancel()
        self.mem_min = min(self.mem_min, mem_available_mib())

    def summary(self) -> dict:
        return {
            "loop_lag_p50_ms": pct(self.lags, 50) * 1e3,
            "loop_lag_p99_ms": pct(self.lags, 99) * 1e3,
            "loop_lag_max_ms": max(self.lags, default=0.0) * 1e3,
            "machine_mem_used_peak_mib": self.mem_before - self.mem_min,
        }


class CpuMeter:
    """CPU seconds of this benchmark and everything it starts (the server process, the sandboxes).

    As in benchmarks/sandbox.py: on cgroup v1 as root, this process joins a cpuacct group of its
    own, which every child inherits, so other work on the machine is not counted. Elsewhere: the
    whole machine's busy time from /proc/stat.
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
        self.scope = "this benchmark, its server and sandboxes (cpuacct)" if self.path else "whole machine (/proc/stat)"

    def seconds(self) -> float:
        if self.path is not None:
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        return machine_cpu_seconds()

    def close(self) -> None:
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            (self.path.parent / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(100):  # the server process and the last sandbox processes may still be exiting
            try:
                self.path.rmdir()
                break
            except OSError:
                time.sleep(0.05)
        self.path = None


class CpuWindow:
    def __init__(self, endpoint: Endpoint, meter: CpuMeter):
        self.endpoint, self.meter = endpoint, meter

    def __enter__(self) -> CpuWindow:
        self.t0, self.self0, self.srv0 = time.perf_counter(), os.times(), self.endpoint.cpu_seconds()
        self.ours0, self.mach0 = self.meter.seconds(), machine_cpu_seconds()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.t0
        s1 = os.times()
        self.host = (s1.user - self.self0.user) + (s1.system - self.self0.system)
        self.server = self.endpoint.cpu_seconds() - self.srv0
        self.ours = self.meter.seconds() - self.ours0
        self.machine = machine_cpu_seconds() - self.mach0


def bench_dir() -> Path:
    # named <kind>-<pid>-..., like agentmill's own scratch folders, so a sweep removes it if we die
    d = Path(tempfile.mkdtemp(prefix=f"bench-{os.getpid()}-", dir=scratch_dir()))
    d.chmod(0o711)
    return d


def make_task(root: Path, name: str, instruction: str, test_sh: str = TEST_SH):
    return load_task(
        write_task(
            root / name,
            instruction=instruction,
            test_sh=test_sh,
            solve_sh=ECHO,
            dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\n",
        )
    )


# -- 1. overhead per turn --------------------------------------------------------------------------


async def bench_turns(
    base: Path, endpoint: Endpoint, meter: CpuMeter, builder: ImageBuilder, turns: int, repeats: int
) -> dict:
    task = make_task(
        base,
        "turns",
        f"Run `true` {turns} times, then finish. {TURNS_TAG}{turns}\n",
        test_sh="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
    )  # nothing to check
    client, chat = timed_client(endpoint.base_url, 64)
    runs, failed = [], []
    with CpuWindow(endpoint, meter) as window:
        try:
            await _turn_trials(task, client, chat, builder, turns, repeats, runs, failed)
        finally:
            await client.close()
    args, kw = chat.last_call  # the last request of the last trial: the longest conversation
    baseline = {
        "short": await bench_call_baseline(endpoint.base_url, [{"role": "user", "content": "hi"}], None),
        "long": await bench_call_baseline(endpoint.base_url, args[0], kw.get("json_schema")),
    }
    keys = [k for k in runs[0] if k != "turns"] if runs else []
    # the breakdown is shown for the run with the median agent time / turn, so that its parts add up
    median_run = sorted(runs, key=lambda r: r["per_turn_s"])[len(runs) // 2] if runs else {}
    return {
        "turns": turns + 2,
        "repeats": len(runs),
        "failed": len(failed),
        "failures": failed[:3],
        "median": {k: statistics.median(r[k] for r in runs) for k in keys},
        "median_run": median_run,
        "runs": runs,
        "baseline": baseline,
        "cores_busy": window.ours / window.wall,
        "machine_cores_busy": window.machine / window.wall,
    }


async def _turn_trials(task, client, chat: Timer, builder, turns: int, repeats: int, runs: list, failed: list) -> None:
    for i in range(repeats + 1):  # the first one is an untimed warm-up
        chat.reset()
        TMUX.reset()
        result = AgentResult()
        trial = await run_trial(task, TerminusAgent(client, max_turns=turns + 5), builder, agent_result=result)
        stats = result.metadata.get("terminus", {})
        if not trial.passed or stats.get("turns") != turns + 2 or stats.get("parse_errors"):
            failed.append({"outcome": trial.outcome.value, "exception": trial.exception, "terminus": stats})
        if i == 0:
            continue
        n = stats.get("turns") or 1
        agent = trial.timings.agent
        runs.append(
            {
                "turns": n,
                "agent_s": agent,
                "per_turn_s": agent / n,
                "model_per_turn_s": chat.total / n,
                "tmux_per_turn_s": TMUX.total / n,
                "other_per_turn_s": (agent - chat.total - TMUX.total) / n,
                "model_call_p50_s": pct(chat.samples, 50),
                "tmux_exec_p50_s": pct(TMUX.samples, 50),
                # the request re-sends the whole conversation: the call's cost grows with it
                "model_call_first5_p50_s": pct(chat.samples[:5], 50),
                "model_call_last5_p50_s": pct(chat.samples[-5:], 50),
                "tmux_execs": len(TMUX.samples),
                "trial_s": trial.timings.total,
            }
        )


async def bench_call_baseline(base_url: str, messages: list, json_schema: dict | None, n: int = 30) -> dict:
    """One chat request, n times in a row: through ModelClient.chat, and as a raw HTTP/1.1
    POST of the same body on one keep-alive asyncio socket. Tells the client stack's share of a model
    call from the server's and the socket's."""
    body = {"model": MODEL, "messages": messages, "temperature": 0}
    if json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": json_schema, "strict": True},
        }
    payload = json.dumps(body).encode()
    url = urlsplit(base_url)
    request = (
        f"POST {url.path}/chat/completions HTTP/1.1\r\nHost: {url.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    client = ModelClient(base_url=base_url, model=MODEL, sampling=SamplingParams(temperature=0))
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sdk, raw = [], []
    try:
        for _ in range(n + 5):
            t0 = time.perf_counter()
            await client.chat(messages, json_schema=json_schema)
            t1 = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            json.loads(await reader.readexactly(length))
            t2 = time.perf_counter()
            sdk.append(t1 - t0)
            raw.append(t2 - t1)
    finally:
        writer.close()
        await client.close()
    return {
        "messages": len(messages),
        "body_bytes": len(payload),
        "modelclient_chat_p50_s": pct(sdk[5:], 50),
        "raw_socket_post_p50_s": pct(raw[5:], 50),
    }


# -- 2. trials per second ----------------------------------------------------------------------------


def level_config(base: Path, concurrency: int, base_url: str, model_concurrency: int) -> RolloutConfig:
    return RolloutConfig(
        dataset=str(base / "tasks"),
        agent="terminus",
        agent_version=TerminusAgent.version,
        model=MODEL,
        sampling=SamplingParams(temperature=0),
        max_turns=10,
        base_url=base_url,
        concurrency=concurrency,
        model_concurrency=model_concurrency,
        max_retries=2,
    )


async def bench_level(
    base: Path,
    tasks,
    endpoint: Endpoint,
    meter: CpuMeter,
    builder: ImageBuilder,
    concurrency: int,
    model_concurrency: int,
) -> dict:
    run_dir = base / f"run-c{concurrency}"
    config = level_config(base, concurrency, endpoint.base_url, model_concurrency)
    client, chat = timed_client(endpoint.base_url, model_concurrency)
    TMUX.reset()
    try:
        with Monitor() as mon, CpuWindow(endpoint, meter) as cpu:
            report = await run_rollout(config, tasks, run_dir, client=client, builder=builder, keep_results=True)
    finally:
        await client.close()
    results = report.results
    failed = [r for r in results if not r.passed]
    turns = [r.agent_metadata.get("terminus", {}).get("turns") for r in results]
    phases = {k: [getattr(r.timings, k) for r in results] for k in ("sandbox_start", "agent", "verifier", "total")}
    out = {
        "concurrency": concurrency,
        "trials": report.ran,
        "wall_s": cpu.wall,
        "trials_per_s": report.ran / cpu.wall,
        "failed": len(failed) + (len(tasks) - report.ran),
        "failures": [
            {
                "task": r.task,
                "outcome": r.outcome.value,
                "exception": r.exception,
                "verifier_stdout": r.verifier_stdout[-200:],
            }
            for r in failed[:5]
        ],
        "turns_not_3": sum(1 for t in turns if t != 3),
        "not_passed_by_outcome": dict(collections.Counter(r.outcome.value for r in failed)),
        "phase_p50_s": {k: statistics.median(v) for k, v in phases.items() if v},
        "trial_p90_s": pct(phases["total"], 90),
        "model_call_p50_s": pct(chat.samples, 50),
        "model_call_p99_s": pct(chat.samples, 99),
        "model_calls": len(chat.samples),
        "model_retries": client.stats.retries,
        "tmux_exec_p50_s": pct(TMUX.samples, 50),
        "host_process_core_pct": 100 * cpu.host / cpu.wall,
        "server_process_core_pct": 100 * cpu.server / cpu.wall,
        "cores_busy": cpu.ours / cpu.wall,
        "cpu_ms_per_trial": 1e3 * cpu.ours / max(report.ran, 1),
        "machine_cores_busy": cpu.machine / cpu.wall,
        **mon.summary(),
    }
    await asyncio.to_thread(shutil.rmtree, run_dir, True)
    return out


# -- main ----------------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--turns", type=int, default=30, help="`true` turns in the overhead trial (default 30)")
    p.add_argument("--repeats", type=int, default=5, help="timed overhead trials, after one warm-up (default 5)")
    p.add_argument(
        "--concurrency",
        default="1,32,256",
        help="comma-separated concurrency levels (default 1,32,256); '' measures only the overhead per turn",
    )
    p.add_argument("--min-trials", type=int, default=16, help="trials per level at least (default 16)")
    p.add_argument(
        "--max-trials", type=int, default=512, help="trials per level at most (default 512); otherwise 2 x concurrency"
    )
    p.add_argument("--model-concurrency", type=int, default=1024, help="ModelClient request gate (default 1024)")
    p.add_argument(
        "--server",
        choices=("process", "thread"),
        default="process",
        help="run the scripted server in a child process (default) or a thread of this one",
    )
    p.add_argument(
        "--keep-nagle",
        action="store_true",
        help="leave the scripted server's stdlib Nagle behaviour (+~40 ms per model call)",
    )
    p.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the figures as JSON here")
    args = p.parse_args(argv)
    try:
        args.levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    except ValueError:
        p.error(f"--concurrency: not a comma-separated list of integers: {args.concurrency!r}")
    if (
        (args.levels and min(args.levels) < 1)
        or args.turns < 1
        or args.repeats < 1
        or args.min_trials < 1
        or args.max_trials < args.min_trials
    ):
        p.error(
            "--turns, --repeats, --min-trials and every concurrency level must be >= 1, "
            "and --max-trials >= --min-trials"
        )
    return args


def trials_for(c: int, args) -> int:
    return min(max(args.min_trials, 2 * c), args.max_trials)


async def run(args, endpoint: Endpoint, meter: CpuMeter, reaps: ReapCounter) -> int:
    report: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "mem_total_mib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20,
            "euid": os.geteuid(),
        },
        "tmux_transports": TRANSPORTS,
        "args": {
            "turns": args.turns,
            "repeats": args.repeats,
            "concurrency": args.levels,
            "trials": {c: trials_for(c, args) for c in args.levels},
            "server": args.server,
            "keep_nagle": args.keep_nagle,
            "model_concurrency": args.model_concurrency,
        },
    }
    ok = True
    started = time.perf_counter()
    instrument_tmux()
    base = bench_dir()
    builder = ImageBuilder()
    try:
        # 1. overhead per turn
        console.print(
            f"[bold]1. harness overhead per agent turn[/] ({args.turns} `true` turns + complete + confirm, "
            f"{args.repeats} timed trials after 1 warm-up, scripted server: {args.server})"
        )
        t = await bench_turns(base, endpoint, meter, builder, args.turns, args.repeats)
        report["turns"] = t
        if t["failed"]:
            ok = False
            for f in t["failures"]:
                console.print(f"[red]overhead trial not as scripted:[/] {f}")
        if t["repeats"]:
            m = t["median_run"]
            tbl = Table(box=box.ASCII2)
            for col in ("per agent turn (run with the median)", "ms", "share"):
                tbl.add_column(col, justify="left" if col.startswith("per") else "right")
            for label, key in (
                ("agent time / turns", "per_turn_s"),
                ("  model call (ModelClient.chat round trip)", "model_per_turn_s"),
                ("  tmux (send-keys, capture-pane, start, channel open)", "tmux_per_turn_s"),
                ("  rest (agent Python, sleeps, event loop)", "other_per_turn_s"),
            ):
                tbl.add_row(label, ms(m[key]), f"{100 * m[key] / m['per_turn_s']:.0f}%")
            console.print(tbl)
            console.print(
                f"{t['turns']} model turns per trial; agent time {ms(m['agent_s'])} ms, whole trial "
                f"{ms(m['trial_s'])} ms; one model call p50 {ms(m['model_call_p50_s'])} ms, one tmux command p50 "
                f"{ms(m['tmux_exec_p50_s'])} ms ({m['tmux_execs']:.0f} per trial); terminal sessions by "
                f"transport: {dict(TRANSPORTS)}."
            )
            console.print(
                f"model call p50 over the first 5 turns {ms(m['model_call_first5_p50_s'])} ms, over the last 5 "
                f"{ms(m['model_call_last5_p50_s'])} ms (every request carries the whole conversation)."
            )
            for label, b in (
                ("a 1-message request", t["baseline"]["short"]),
                (
                    f"the last request ({t['baseline']['long']['messages']} messages, "
                    f"{t['baseline']['long']['body_bytes'] / 1024:.0f} KiB)",
                    t["baseline"]["long"],
                ),
            ):
                console.print(
                    f"{label}, in a row, p50: ModelClient.chat {ms(b['modelclient_chat_p50_s'])} ms, "
                    f"the same body as a raw HTTP POST on a socket {ms(b['raw_socket_post_p50_s'])} ms."
                )
            console.print()

        # 2. trials per second
        levels = []
        if not args.levels:
            return _finish(args, report, [], meter, reaps, ok, started)
        n_tasks = max(trials_for(c, args) for c in args.levels)
        console.print(
            "[bold]2. terminus trials per second via run_rollout[/] (3 instant turns each; trials per level: "
            + ", ".join(f"{trials_for(c, args)} at {c}" for c in args.levels)
            + ")"
        )
        for c in args.levels:
            if trials_for(c, args) < 2 * c:
                console.print(
                    f"[yellow]note:[/] concurrency {c} gets {trials_for(c, args)} trials, "
                    f"fewer than 2 x concurrency (--max-trials)"
                )
        tasks_root = base / "tasks"
        tasks = await asyncio.to_thread(
            lambda: [
                make_task(tasks_root, f"echo-{i:04d}", f"Write the word hello into /app/out.txt. (variant {i})\n")
                for i in range(n_tasks)
            ]
        )
        assert len({t.content_hash for t in tasks}) == n_tasks, "tasks must be distinct"
        t0 = time.perf_counter()
        image = await builder.get(tasks[0])  # all tasks share one environment: one image, warmed here
        console.print(
            f"image {image.key[:12]} ready in {time.perf_counter() - t0:.2f}s; {n_tasks} distinct tasks written"
        )
        # an untimed 2-trial rollout first: fail fast if broken, warm the verifier toolkit and imports
        warm = await bench_level(base / "warm", tasks[:2], endpoint, meter, builder, 2, args.model_concurrency)
        if warm["failed"]:
            ok = False
            console.print(f"[red]warm-up rollout did not pass:[/] {warm['failures']}")
        for c in args.levels:
            r = await bench_level(
                base, tasks[: trials_for(c, args)], endpoint, meter, builder, c, args.model_concurrency
            )
            levels.append(r)
            console.print(f"  concurrency {c}: {r['trials']} trials in {r['wall_s']:.1f}s, {r['failed']} not passed")
            if r["failed"] or r["turns_not_3"]:
                ok = False
        report["trials"] = levels
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return _finish(args, report, levels, meter, reaps, ok, started)


def _finish(args, report: dict, levels: list, meter: CpuMeter, reaps: ReapCounter, ok: bool, started: float) -> int:
    if levels:
        tbl = Table(box=box.ASCII2)
        for col in (
            "conc.",
            "trials",
            "wall s",
            "trials/s",
            "not passed",
            "p50 ms",
            "p90 ms",
            "CPU ms/trial",
            "cores",
            "machine",
        ):
            tbl.add_column(col, justify="right")
        for r in levels:
            tbl.add_row(
                str(r["concurrency"]),
                str(r["trials"]),
                f"{r['wall_s']:.1f}",
                f"{r['trials_per_s']:.2f}",
                str(r["failed"]),
                ms(r["phase_p50_s"]["total"]),
                ms(r["trial_p90_s"]),
                f"{r['cpu_ms_per_trial']:.0f}",
                f"{r['cores_busy']:.2f}",
                f"{r['machine_cores_busy']:.2f}",
            )
        console.print(tbl)
        tbl = Table(box=box.ASCII2, title="per trial p50 (ms), and this process")
        for col in (
            "conc.",
            "sandbox start",
            "agent",
            "verifier",
            "model call p50/p99",
            "tmux call",
            "loop lag p99/max",
            "host",
            "server",
            "mem MiB",
        ):
            tbl.add_column(col, justify="right")
        for r in levels:
            ph = r["phase_p50_s"]
            tbl.add_row(
                str(r["concurrency"]),
                ms(ph["sandbox_start"]),
                ms(ph["agent"]),
                ms(ph["verifier"]),
                f"{ms(r['model_call_p50_s'])} / {ms(r['model_call_p99_s'])}",
                ms(r["tmux_exec_p50_s"]),
                f"{r['loop_lag_p99_ms']:.0f} / {r['loop_lag_max_ms']:.0f}",
                f"{r['host_process_core_pct']:.0f}%",
                f"{r['server_process_core_pct']:.0f}%",
                f"{r['machine_mem_used_peak_mib']:.0f}",
            )
        console.print(tbl)
        console.print(
            "p50/p90 = one trial's latency (rootfs copy, agent sandbox start, agent's 3 turns, verifier sandbox), "
            "without run_rollout's writing and fsyncing of the trial folder and ledger row, which trials/s "
            f"includes. CPU ms/trial and cores count {meter.scope}; machine = the whole machine's busy cores; host / server = this "
            "process / the scripted server process as a share of one core; mem MiB = peak drop of the machine's "
            "MemAvailable; loop lag = how late a 20 ms timer fired (the event loop was blocked)."
        )
        for r in levels:
            if r["turns_not_3"]:
                console.print(
                    f"[red]concurrency {r['concurrency']}: {r['turns_not_3']} trial(s) did not take 3 turns[/]"
                )
            if r["model_retries"]:
                console.print(f"[yellow]concurrency {r['concurrency']}: {r['model_retries']} model request retries[/]")
            if r["not_passed_by_outcome"]:
                console.print(
                    f"[red]concurrency {r['concurrency']}: not passed by outcome:[/] {r['not_passed_by_outcome']}"
                )
            for f in r["failures"]:
                console.print(f"[red]concurrency {r['concurrency']}: not passed:[/] {f}")
    others = max((r["machine_cores_busy"] - r["cores_busy"] for r in [report["turns"], *levels]), default=0.0)
    if meter.path is not None and others > 0.25:
        console.print(
            f"[yellow]warning:[/] other work kept up to {others:.2f} cores busy during the trials: "
            "throughput and latencies are understated; rerun on a quiet machine."
        )
    report["cpu_scope"] = meter.scope
    report["host_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report["total_wall_s"] = time.perf_counter() - started
    report["asyncio_unknown_child_warnings"] = reaps.count
    if reaps.count:
        console.print(f"note: asyncio logged 'Unknown child process pid ...' {reaps.count} time(s).")
    not_passed = sum(r["failed"] for r in levels) + report["turns"]["failed"]
    console.print(
        f"\nbenchmark process peak RSS {report['host_peak_rss_mib']:.0f} MiB; total benchmark time "
        f"{report['total_wall_s']:.1f}s; "
        + ("all trials passed" if ok else f"[red]SOME TRIALS DID NOT PASS ({not_passed} not passed)[/]")
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if ok else 1


def main(args) -> int:
    reaps = ReapCounter()
    logging.getLogger("asyncio").addFilter(reaps)
    meter = CpuMeter()  # first, so that the forked server process is counted too
    try:
        with Endpoint(args.server, args.keep_nagle) as endpoint:  # forked before the event loop starts
            return asyncio.run(run(args, endpoint, meter, reaps))
    finally:
        meter.close()


if __name__ == "__main__":
    sys.exit(main(parse_args()))
