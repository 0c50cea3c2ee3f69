"""Trials on this machine, spread over worker processes: one event loop per worker.

One event loop carries every episode's turns in `LocalExecutor`: model calls, terminal reads, sandbox
starts. At hundreds of episodes in flight that one thread is the limit (docs/benchmarks.md, "Hundreds
in flight, fifth session"), and on a many-core machine it is the limit long before the cores are.
This executor starts `workers` Python processes (`process_worker.py`), gives each a share of the
concurrency, and sends them jobs over their stdin; each runs its jobs on its own loop with its own
model client and answers on a private pipe. The driver keeps the run folder and the ledger:
`before` and `after` run here, as with Ray.

Exactly once: a job is sent to one worker and recorded once, when its result comes back. A worker
that dies takes its jobs in flight with it: each is recorded as `work.failure(job, why)` (a
sandbox_error: the machinery's fault, rerun by `--retry infra`), and a new worker takes its place.
A job whose `work` raised (a bug: trials type their own failures) is recorded the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import pickle
import struct
import sys
from collections import deque
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.rollout.executor import Executor, unrunnable
from agentmill.runtime.child_processes import spawn
from agentmill.runtime.paths import scratch_temp

_FRAME = struct.Struct("!Q")  # every message: its length, then a pickle
_STREAM_LIMIT = 1 << 30
_MAX_RESTARTS = 8  # workers that may die in one map before the run stops


def pack(message) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(data)) + data


async def unpack(reader: asyncio.StreamReader):
    """The next message, or None at the end of the stream."""
    try:
        head = await reader.readexactly(_FRAME.size)
        return pickle.loads(await reader.readexactly(_FRAME.unpack(head)[0]))
    except asyncio.IncompleteReadError:
        return None


class Raised(str):
    """A worker's answer for a job whose `work` raised: what it raised."""


class ProcessExecutor(Executor):
    name = "processes"

    def __init__(self, concurrency: int, *, workers: int | None = None):
        """`concurrency`: jobs at once in all; `workers`: processes (default: one per core), each
        running an equal share of the concurrency."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if workers is not None and workers < 1:
            raise ValueError("workers must be at least 1")
        self.concurrency = concurrency
        self.workers = min(workers or os.cpu_count() or 1, concurrency)
        self.deaths: list[str] = []  # why each worker that died in the last map died

    async def map(self, work, jobs, *, before=None, after=None) -> list:
        jobs = list(jobs)
        if not jobs:
            return []
        count = min(self.workers, len(jobs))
        slots = math.ceil(self.concurrency / count)
        payload = pack(work)
        done: asyncio.Queue = asyncio.Queue()
        workers = [await _Worker.start(payload, slots, done) for _ in range(count)]
        results: list = [None] * len(jobs)
        queue, left = deque(range(len(jobs))), len(jobs)
        self.deaths = []
        try:
            while left:
                for w in workers:
                    while queue and w.alive and len(w.jobs) < slots:
                        i = queue.popleft()
                        if before is not None:
                            before(jobs[i])
                        w.send(i, jobs[i])
                worker, i, result = await done.get()
                if i is None:  # the worker died: its jobs in flight fail, a new one takes its place
                    why = await worker.death()
                    self.deaths.append(why)
                    for j in worker.jobs:
                        results[j] = await _record(after, jobs[j], unrunnable("processes", work, jobs[j], why))
                        left -= 1
                    worker.jobs.clear()
                    workers.remove(worker)
                    if len(self.deaths) > _MAX_RESTARTS:
                        raise AgentmillError(f"processes: {len(self.deaths)} worker processes died; last: {why}")
                    if queue:
                        workers.append(await _Worker.start(payload, slots, done))
                    continue
                worker.jobs.discard(i)
                if isinstance(result, Raised):
                    result = unrunnable("processes", work, jobs[i], f"it raised in its worker process: {result}")
                results[i] = await _record(after, jobs[i], result)
                left -= 1
        finally:
            await asyncio.gather(*(w.close(graceful=not left) for w in workers), return_exceptions=True)
        return results


async def _record(after, job, result):
    return await after(job, result) if after is not None else result


class _Worker:
    """One worker process: jobs go in on its stdin, results come back on its stdout."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr_path: Path, done: asyncio.Queue):
        self.proc, self.stderr_path, self.done = proc, stderr_path, done
        assert proc.stdin is not None and proc.stdout is not None  # start() pipes both
        self._stdin, self._stdout = proc.stdin, proc.stdout
        self.jobs: set[int] = set()
        self.alive = True
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, payload: bytes, slots: int, done: asyncio.Queue) -> _Worker:
        stderr_path = scratch_temp("worker") / "stderr"
        with open(stderr_path, "wb") as err:
            proc = await spawn(  # keeps the driver's raise: its loop carries the turns (loops.py)
                sys.executable,
                "-m",
                "agentmill.rollout.executors.process_worker",
                str(slots),
                keep_raise=True,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
                limit=_STREAM_LIMIT,
            )
        worker = cls(proc, stderr_path, done)
        worker._stdin.write(payload)
        return worker

    def send(self, i: int, job) -> None:
        self.jobs.add(i)
        self._stdin.write(pack((i, job)))

    async def _read(self) -> None:
        while (message := await unpack(self._stdout)) is not None:
            i, result = message
            self.done.put_nowait((self, i, result))
        self.alive = False
        self.done.put_nowait((self, None, None))

    async def death(self) -> str:
        code = await self.proc.wait()
        tail = self.stderr_path.read_text(errors="replace").strip()[-1500:]
        return f"its worker process died (exit {code})" + (f": {tail}" if tail else "")

    async def close(self, graceful: bool) -> None:
        """graceful: no more jobs, so the worker exits once it has answered (at once after a full
        map). Otherwise (the map was stopped) it is killed, and its sandboxes die with it."""
        with contextlib.suppress(Exception):
            self._stdin.close()
        try:
            if not graceful:
                raise TimeoutError
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), 30)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        finally:
            self._reader.cancel()
            with contextlib.suppress(OSError):
                self.stderr_path.unlink()
                self.stderr_path.parent.rmdir()
