"""Executors decide where trials run and how many at once; the runner plans, records and resumes.

The runner hands an executor a list of jobs and one coroutine function that runs a job and never
raises for a job's own failure (it returns a typed result). `LocalExecutor` runs them in this
process's event loop, bounded by a semaphore. An executor that spreads jobs over machines (Ray)
implements the same `map` and is registered in `EXECUTORS`; the runner does not change.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar, TypeVar

J = TypeVar("J")
R = TypeVar("R")


class Executor(ABC):
    name: ClassVar[str]

    @abstractmethod
    async def map(self, work: Callable[[J], Awaitable[R]], jobs: Sequence[J]) -> list[R]:
        """Run `work(job)` for every job; results in the order of `jobs`. Cancelling the call stops them all."""


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, concurrency: int):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency

    async def map(self, work: Callable[[J], Awaitable[R]], jobs: Sequence[J]) -> list[R]:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(job: J) -> R:
            async with gate:
                return await work(job)

        return list(await asyncio.gather(*(one(j) for j in jobs)))


EXECUTORS: dict[str, Callable[..., Executor]] = {LocalExecutor.name: LocalExecutor}


def make_executor(name: str = "local", *, concurrency: int) -> Executor:
    try:
        factory = EXECUTORS[name]
    except KeyError:
        raise ValueError(f"unknown executor '{name}' (known: {', '.join(sorted(EXECUTORS))})") from None
    return factory(concurrency=concurrency)
