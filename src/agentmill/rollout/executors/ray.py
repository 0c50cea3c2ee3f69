"""Trials on a Ray cluster: one worker actor per node runs them, the driver dispatches and records.

The driver (the process that runs `agentmill rollout`) keeps the run folder and its ledger: `before`
and `after` run here, so the ledger stays the single source of truth and no worker writes it. Each
alive node with CPUs gets one worker (`ray_nodes.py`) that runs up to `concurrency` jobs at once. A
job's task folder travels with it (packed once per task, landed and hash-checked once per node).

Exactly once: a job has at most one call in flight. When its node dies the call fails, the job goes
back to the queue and runs again elsewhere; only a result that came back is recorded, once. A job
whose node died `node_losses` times is recorded as `work.failure(job, why)`. If the driver itself
dies, the ledger's own resume rules apply (rows left running are run again).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import Counter, deque
from collections.abc import Callable

import ray

from agentmill.errors import AgentmillError
from agentmill.rollout.executor import Executor, unrunnable
from agentmill.rollout.executors.ray_nodes import NodeActor, NodePool, Unrunnable, brief_error, code_hash
from agentmill.rollout.executors.task_files import pack_task
from agentmill.tasks.model import Task

# How a call fails when its node (or the actor's process) is gone: the job runs again elsewhere.
NODE_LOST = (
    ray.exceptions.RayActorError,
    ray.exceptions.NodeDiedError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.OwnerDiedError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.LocalRayletDiedError,
)


class RayExecutor(Executor):
    name = "ray"

    def __init__(
        self,
        concurrency: int,
        *,
        address: str | None = None,
        node_losses: int = 3,
        wait_for_nodes: float = 120.0,
        refresh_seconds: float = 2.0,
        init_options: dict | None = None,
        say: Callable[[str], None] | None = None,
        driver_code: str | None = None,
    ):
        """`concurrency`: jobs at once on each node. `address`: the cluster (`ray start --head` prints it);
        None: $RAY_ADDRESS, else a cluster `ray start` began on this machine, else a Ray just for the run. `node_losses`: how often a job's
        node may die under it before it is recorded as failed. `wait_for_nodes`: seconds without any node
        to run on before the run stops (what is left runs on resume). `driver_code`: the agentmill code hash
        every node must have (default: this process's)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        problem = _unreachable(address) if address else None
        if problem:  # refused before anything costly starts (Ray itself would retry for minutes)
            raise AgentmillError(f"--address {address}: could not join a Ray cluster: {problem}")
        self.concurrency, self.address = concurrency, address
        self.node_losses, self.wait_for_nodes, self.refresh_seconds = node_losses, wait_for_nodes, refresh_seconds
        self.init_options = init_options or {}
        self.driver_code = driver_code
        self.say = say or (lambda _line: None)
        self.ran_on: dict[int, str] = {}  # job index -> the node whose result was recorded
        self.requeued: list[int] = []  # job indexes sent again because their node died
        self._pool: NodePool | None = None

    def busy(self) -> dict[str, int]:
        """Jobs in flight per node id, now (empty outside `map`)."""
        return self._pool.busy() if self._pool is not None else {}

    async def map(self, work, jobs, *, before=None, after=None) -> list:
        jobs = list(jobs)
        if not jobs:
            return []
        started_here = self._connect()
        pool = None
        try:
            code = self.driver_code
            if not code:
                code = await asyncio.to_thread(code_hash)
            pool = self._pool = NodePool(ray.put(work), self.concurrency, self.say, code)
            return await self._dispatch(pool, work, jobs, before, after)
        finally:
            self._pool = None
            if pool is not None:
                await asyncio.to_thread(pool.close)
            if started_here:
                ray.shutdown()

    def _connect(self) -> bool:
        """Join the cluster unless this process already has; True if we did (and so must leave it)."""
        if ray.is_initialized():
            return False
        options = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False, **self.init_options}
        where = f"--address {self.address}" if self.address else "Ray"
        try:
            ray.init(address=self.address, **options)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise AgentmillError(f"{where}: could not join a Ray cluster: {str(e).splitlines()[0]}") from None
        return True

    async def _dispatch(self, pool: NodePool, work, jobs: list, before, after) -> list:
        results: list = [None] * len(jobs)
        queue = deque(range(len(jobs)))
        in_flight: dict[asyncio.Future, tuple[int, NodeActor]] = {}
        started: set[int] = set()
        losses: Counter[int] = Counter()
        packed: dict[str, ray.ObjectRef] = {}  # task content hash -> its folder in the object store
        refreshed = idle_since = 0.0
        while queue or in_flight:
            now = time.monotonic()
            if now - refreshed >= self.refresh_seconds:
                await asyncio.to_thread(pool.refresh)
                refreshed = now
            for starting in pool.starting():
                if starting.hello is None:
                    starting.hello = asyncio.wrap_future(starting.handle.hello.remote().future())
            while queue and (actor := pool.free()) is not None:
                i = queue.popleft()
                if i not in started:  # a job sent again after a node died is still the same running trial
                    started.add(i)
                    if before is not None:
                        before(jobs[i])
                files = await self._files(jobs[i], packed)
                ref = actor.handle.run.remote(jobs[i], files)
                in_flight[asyncio.wrap_future(ref.future())] = (i, actor)
                actor.busy += 1
            hellos = {a.hello: a for a in pool.starting() if a.hello is not None}  # each one's was sent above
            if not in_flight and not hellos:
                idle_since = idle_since or now
                if now - idle_since > self.wait_for_nodes:
                    left_out = "".join(f"; node {n[:12]} left out: {why}" for n, why in pool.left_out.items())
                    raise AgentmillError(
                        f"ray: no node to run on for {self.wait_for_nodes:g}s; {len(queue)} trial(s) "
                        f"not run (they run on resume). Are the worker nodes up?{left_out}"
                    )
                await asyncio.sleep(0.5)
                refreshed = 0.0
                continue
            idle_since = 0.0
            done, _ = await asyncio.wait(
                [*in_flight, *hellos], timeout=self.refresh_seconds, return_when=asyncio.FIRST_COMPLETED
            )
            for fut in done:
                if fut in hellos:
                    pool.greeted(hellos[fut])
                    continue
                i, actor = in_flight.pop(fut)
                actor.busy -= 1
                out = self._outcome(fut, i, actor, pool, losses)
                if out is None:  # lost with its node: queued again, first in line
                    queue.appendleft(i)
                    self.requeued.append(i)
                    continue
                if isinstance(out, Unrunnable):
                    out = unrunnable("ray", work, jobs[i], out.message)
                else:
                    self.ran_on[i] = actor.node_id
                results[i] = await after(jobs[i], out) if after is not None else out
        return results

    def _outcome(self, fut: asyncio.Future, i: int, actor: NodeActor, pool: NodePool, losses: Counter):
        """The job's result; an Unrunnable; or None when it must run again (its node died)."""
        try:
            return fut.result()
        except NODE_LOST as e:
            pool.lost(actor)
            losses[i] += 1
            if losses[i] < self.node_losses:
                return None
            return Unrunnable(f"its Ray node died {losses[i]} times while running it (last: {brief_error(e)})")
        except ray.exceptions.RayTaskError as e:
            return Unrunnable(f"it raised on Ray node {actor.node_id[:12]}: {brief_error(e)}")

    async def _files(self, job, packed: dict) -> ray.ObjectRef | None:
        """The job's task folder in the object store (packed once per task), or None for a job without one."""
        task = getattr(job, "task", None)
        if not isinstance(task, Task):
            return None
        if task.content_hash not in packed:
            packed[task.content_hash] = ray.put(await asyncio.to_thread(pack_task, task))
        return packed[task.content_hash]


def _unreachable(address: str, timeout: float = 10.0) -> str | None:
    """Why nothing answers at a `host:port` cluster address, or None (also for 'auto' and ray:// forms)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in address:
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        return f"nothing answers at {address} ({e.strerror or type(e).__name__}); is `ray start --head` running there?"
    return None
