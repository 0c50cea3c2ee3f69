"""Event-loop lag inside the processes executor's workers (for benchmarks/inflight.py --workers).

With `--workers N` the driver's loop only sends jobs and records results; the trials' turns run on
the workers' loops. `ProbedProcesses` ships each worker a wrapped `work` that starts a lag monitor
(rollout.Monitor, the same 20 ms timer as the driver's) on the worker's loop at its first job and,
when the worker closes, writes that loop's lags to `<out>/lags-<pid>.json`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import rollout as rb  # benchmarks/rollout.py: the lag monitor

from agentmill.rollout.executors.processes import ProcessExecutor


class LagProbed:
    """`work` plus a lag monitor on the loop that runs it."""

    def __init__(self, work, out: Path):
        self.work, self.out, self._monitor = work, out, None

    def __getstate__(self) -> dict:
        return {"work": self.work, "out": self.out, "_monitor": None}

    async def __call__(self, job):
        if self._monitor is None:
            self._monitor = rb.Monitor().__enter__()
        return await self.work(job)

    def failure(self, job, message: str):
        return self.work.failure(job, message)

    async def close(self) -> None:
        if self._monitor is not None:
            self._monitor.__exit__(None, None, None)
            (self.out / f"lags-{os.getpid()}.json").write_text(json.dumps(self._monitor.lags))
        close = getattr(self.work, "close", None)
        if close is not None:
            await close()


class ProbedProcesses(ProcessExecutor):
    def __init__(self, concurrency: int, *, workers: int, out: Path):
        super().__init__(concurrency, workers=workers)
        self.out = out

    async def map(self, work, jobs, **hooks) -> list:
        return await super().map(LagProbed(work, self.out), jobs, **hooks)


def worker_lags(out: Path) -> dict:
    """p50/p99/max (ms) of every worker's loop lag pooled, and each worker's p99."""
    per = [json.loads(p.read_text()) for p in sorted(out.glob("lags-*.json"))]
    pooled = [x for lags in per for x in lags]
    return {
        "worker_loop_lag_p50_ms": rb.pct(pooled, 50) * 1e3,
        "worker_loop_lag_p99_ms": rb.pct(pooled, 99) * 1e3,
        "worker_loop_lag_max_ms": max(pooled, default=0.0) * 1e3,
        "worker_loop_lag_p99_each_ms": [rb.pct(lags, 99) * 1e3 for lags in per],
    }
