"""A worker of the processes executor (processes.py): `python -m ... SLOTS`.

Its stdin brings the pickled `work`, then `(index, job)` messages; for each job it runs
`work(job)` on its own event loop, up to SLOTS at once, and answers `(index, result)` on the pipe
that was its stdout. Its own stdout then points at its stderr, so nothing a library prints can
corrupt the answers. When stdin ends it finishes the jobs it has and exits.
"""

from __future__ import annotations

import asyncio
import os
import sys
import traceback

from agentmill.rollout.executors.processes import Raised, pack, unpack


async def serve(slots: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # print() and friends now go to stderr
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, answers)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    work = await unpack(reader)
    gate = asyncio.Semaphore(slots)
    running: set[asyncio.Task] = set()

    async def one(i: int, job) -> None:
        try:
            async with gate:
                answer = pack((i, await work(job)))
        except Exception as e:  # noqa: BLE001 - the job's own bug (or an unpicklable result): told, not fatal
            answer = pack((i, Raised("".join(traceback.format_exception_only(type(e), e)).strip())))
        writer.write(answer)
        await writer.drain()

    try:
        while (message := await unpack(reader)) is not None:
            task = asyncio.ensure_future(one(*message))
            running.add(task)
            task.add_done_callback(running.discard)
        await asyncio.gather(*running)
    finally:
        close = getattr(work, "close", None)
        if close is not None:
            await close()
        writer.close()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
