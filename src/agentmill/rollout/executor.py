"""Executors decide where trials run and how many at once; the runner plans, records and resumes.

The runner hands an executor its jobs and three callables, split by where they must run:
`before(job)` in the driver when a job is dispatched (mark it running), `work(job)` wherever the
sandbox is (run the trial; it never raises for a job's own failure, it returns a typed result), and
`after(job, result)` back in the driver (write the trial folder, mark it done). `LocalExecutor`
runs all three in this process's event loop, bounded by a semaphore. An executor that spreads the
`work` over machines (Ray) implements the same `map` and is named in `EXECUTORS`; the runner does
not change. Such an executor pickles `work` and the jobs to send them, and, for a job its own
machinery could not run (a node that kept dying), records `work.failure(job, message)` instead.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import ClassVar, TypeVar

from agentmill.errors import AgentmillError
from agentmill.registry import Registry

J = TypeVar("J")
R = TypeVar("R")
T = TypeVar("T")


class Executor(ABC):
    name: ClassVar[str]

    @abstractmethod
    async def map(
        self,
        work: Callable[[J], Awaitable[R]],
        jobs: Iterable[J],
        *,
        before: Callable[[J], None] | None = None,
        after: Callable[[J, R], Awaitable[T]] | None = None,
    ) -> list:
        """For every job: before(job), work(job), after(job, result); the results of `after` (or of
        `work` without it) in the order of `jobs`. Cancelling the call stops every job."""


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, concurrency: int):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency

    async def map(self, work, jobs, *, before=None, after=None) -> list:
        """`concurrency` runners take the jobs one at a time, in order, from `jobs` (an iterator is read
        only as runners free up: a long plan is never held whole, nor a coroutine per job)."""
        queue = enumerate(jobs)
        results: list = []

        async def runner():
            for i, job in queue:  # one shared iterator: each job is taken by exactly one runner
                results.extend([None] * (i + 1 - len(results)))
                if before is not None:
                    before(job)
                result = await work(job)
                results[i] = await after(job, result) if after is not None else result

        await asyncio.gather(*(runner() for _ in range(self.concurrency)))
        return results


def unrunnable(executor: str, work, job, message: str):
    """The result to record for a job an executor's own machinery could not run (a node or worker
    that died, a job that raised there): `work.failure(job, message)`, else one clear error."""
    failure = getattr(work, "failure", None)
    if failure is None:
        raise AgentmillError(f"{executor}: a job could not run: {message}")
    return failure(job, message)


# Executors by name. Local is here; the others are imported only when chosen (and need the extra
# named in EXTRAS); plug-ins declare `agentmill.executors`.
EXECUTORS: Registry[Callable[..., Executor]] = Registry(
    "executor",
    group="agentmill.executors",
    builtins={
        "processes": "agentmill.rollout.executors.processes:ProcessExecutor",
        "ray": "agentmill.rollout.executors.ray:RayExecutor",
    },
)
EXECUTORS.register(LocalExecutor.name, LocalExecutor)
EXTRAS = {"ray": "ray"}  # executor -> the extra its engine needs


def make_executor(name: str = "local", *, concurrency: int, **options) -> Executor:
    """An executor by name; `options` go to its constructor (e.g. Ray's `address`, the processes'
    `workers`)."""
    try:
        factory = EXECUTORS.get(name)
    except ImportError as e:
        if name not in EXTRAS:
            raise
        raise ValueError(
            f"executor '{name}' needs the '{EXTRAS[name]}' extra: pip install 'agentmill[{EXTRAS[name]}]' ({e})"
        ) from None
    return factory(concurrency=concurrency, **options)
