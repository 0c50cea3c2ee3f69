#!/usr/bin/env python3
"""Tool environment benchmark: the cost of a sandboxed tool call, and tool trials per second.

1. Overhead per tool call (agent -> sandboxed tool -> result): `ToolSession.call` on a tool that
   does one indexed SELECT, timed from the caller's side. The tool itself takes microseconds, so
   the figure is the harness: JSON over the unix socket into the sandbox, argument validation,
   fork of a child with its own SQLite connection, commit, reply. Also the fallback for sandboxes
   without a control directory (one `python3 toolhost.py once` exec per call).
2. Trials per second: full `tools`-agent trials (run_trial: image copy, sandbox, database build in
   the sandbox, tool host start, two model turns, a fresh verifier sandbox running the SQL
   verifiers) against the test suite's ChatServer answering instantly (first turn: one
   `close_ticket` call; second: a final answer). Every trial must pass. Concurrency 1 and 32.

Usage: .venv/bin/python benchmarks/tools.py [--calls 300] [--trials 8,64] [--concurrency 1,32] [--json PATH]
Needs bubblewrap and util-linux; run as root, like agentmill itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # tests.helpers.chat_server, tests.tools.helpers

from agentmill.agents import make_agent  # noqa: E402
from agentmill.images import ImageBuilder  # noqa: E402
from agentmill.models.client import ModelClient  # noqa: E402
from agentmill.rollout.trial import run_trial  # noqa: E402
from agentmill.tasks import load_task  # noqa: E402
from agentmill.tools import open_tool_session  # noqa: E402
from agentmill.tools.sandboxed import task_sandbox  # noqa: E402
from agentmill.verify.outcome import Outcome  # noqa: E402
from tests.helpers.chat_server import ChatServer, Reply  # noqa: E402
from tests.tools.helpers import make_tool_task  # noqa: E402


def instant_policy(request) -> Reply:
    """First turn: close ticket 1; after the tool result: the final answer."""
    if request["messages"][-1]["role"] == "tool":
        return Reply("Closed ticket 1: the VPN certificate was renewed.")
    return Reply(
        None,
        tool_calls=[
            {
                "id": "call_1",
                "name": "close_ticket",
                "arguments": {"ticket_id": 1, "resolution": "Renewed the VPN certificate."},
            }
        ],
    )


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def call_overhead(task, n: int) -> dict:
    class NoSocket:  # the exec-per-call fallback: same sandbox, no control directory
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            if name == "control_dir":
                raise AttributeError(name)
            return getattr(self.inner, name)

    out = {}
    async with task_sandbox(task) as sb:
        for label, box, count in (("socket", sb, n), ("exec_fallback", NoSocket(sb), max(20, n // 10))):
            async with open_tool_session(task, box) as s:
                for _ in range(10):  # warm up
                    await s.call("get_ticket", {"ticket_id": 1})
                times = []
                for i in range(count):
                    t = time.perf_counter()
                    r = await s.call("get_ticket", {"ticket_id": 1 + i % 3})
                    times.append(time.perf_counter() - t)
                    assert not r.is_error, r.content
                out[label] = {
                    "calls": count,
                    "p50_ms": 1000 * statistics.median(times),
                    "p90_ms": 1000 * pct(times, 0.9),
                }
    return out


async def trials_per_second(tasks, base_url: str, concurrency: int, builder: ImageBuilder) -> dict:
    client = ModelClient(base_url=base_url, model="instant", max_retries=2, max_concurrency=1024)
    gate = asyncio.Semaphore(concurrency)

    async def one(task):
        async with gate:
            return await run_trial(task, make_agent("tools", client=client, max_turns=5), builder)

    started = time.perf_counter()
    results = await asyncio.gather(*(one(t) for t in tasks))
    wall = time.perf_counter() - started
    await client.close()
    bad = [r for r in results if r.outcome is not Outcome.PASSED]
    if bad:
        raise SystemExit(f"{len(bad)} trials did not pass: {bad[0].outcome.value}: {bad[0].exception}")
    return {"concurrency": concurrency, "trials": len(tasks), "seconds": wall, "trials_per_s": len(tasks) / wall}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--trials", default="8,64", help="trials per concurrency level")
    ap.add_argument("--concurrency", default="1,32")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    counts = [int(x) for x in args.trials.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        base = load_task(make_tool_task(Path(tmp) / "close-vpn"))
        overhead = await call_overhead(base, args.calls)
        print(
            f"tool call, socket:        p50 {overhead['socket']['p50_ms']:.2f} ms  p90 {overhead['socket']['p90_ms']:.2f} ms "
            f"({overhead['socket']['calls']} calls)"
        )
        print(
            f"tool call, exec fallback: p50 {overhead['exec_fallback']['p50_ms']:.2f} ms  "
            f"p90 {overhead['exec_fallback']['p90_ms']:.2f} ms ({overhead['exec_fallback']['calls']} calls)"
        )
        builder = ImageBuilder()
        rates = []
        with ChatServer(instant_policy, model="instant") as server:
            for level, count in zip(levels, counts):
                # distinct tasks (content hashes), as in a real run
                tasks = [
                    load_task(make_tool_task(Path(tmp) / f"c{level}-{i}", instruction=f"Close the VPN ticket ({i}).\n"))
                    for i in range(count)
                ]
                rate = await trials_per_second(tasks, server.base_url, level, builder)
                rates.append(rate)
                print(
                    f"tools trials, concurrency {level:>3}: {rate['trials']} trials in {rate['seconds']:.1f} s = "
                    f"{rate['trials_per_s']:.2f} trials/s"
                )
    report = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "call_overhead": overhead,
        "trials": rates,
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
