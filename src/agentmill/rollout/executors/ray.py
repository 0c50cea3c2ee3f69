"""Trials on a Ray cluster: one worker actor per node runs them, the driver dispatches and records.

The driver (the process that runs `agentmill rollout`) keeps the run folder and its ledger: `before`
and `after` run here, so the ledger stays the single source of truth and no worker writes it. Each
alive node with CPUs gets one async actor holding the shipped `work` (for trials: a client to the
same endpoint and the node's own image cache); it runs up to `concurrency` jobs at once. A job's
task folder travels with it (packed once per task, landed and hash-checked once per node).

Exactly once: a job has at most one call in flight. When its node dies the call fails, the job goes
back to the queue and runs again elsewhere; only a result that came back is recorded, once. A job
whose node died `node_losses` times is recorded as `work.failure(job, why)`. If the driver itself
dies, the ledger's own resume rules apply (rows left running are run again).
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import agentmill
from agentmill.errors import AgentmillError
from agentmill.rollout.executor import EXECUTORS, Executor
from agentmill.rollout.executors.task_files import land_task, pack_task
from agentmill.tasks.hashing import hash_tree
from agentmill.tasks.model import Task

# How a call fails when its node (or the actor's process) is gone: the job runs again elsewhere.
NODE_LOST = (ray.exceptions.RayActorError, ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError,
             ray.exceptions.OwnerDiedError, ray.exceptions.WorkerCrashedError, ray.exceptions.LocalRayletDiedError)


@dataclass
class Unrunnable:
    """A job the executor's machinery could not run (its task did not land, it raised on the node)."""

    message: str


class NodeWorker:
    """One per node: runs jobs with the shipped `work`, never touches the driver's run folder."""

    def __init__(self, work, driver_code: str):
        self.work, self.driver_code = work, driver_code
        self.tasks: dict[str, Task] = {}  # content hash -> this node's landed copy

    async def hello(self) -> str | None:
        """Why this node cannot run jobs, or None once it can: the same agentmill code as the driver
        (else its trials would not be the ones their identity names), and its own verifier toolkit."""
        from agentmill.rollout.runner import require_toolkit

        mine = await asyncio.to_thread(code_hash)
        if mine != self.driver_code:
            return (f"its agentmill code differs from the driver's (code hash {mine[:12]}, driver {self.driver_code[:12]}): "
                    "install the same checkout on every node")
        try:
            await asyncio.to_thread(require_toolkit)  # built once per machine, from PyPI
        except AgentmillError as e:
            return str(e)
        return None

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def run(self, job, packed: bytes | None):
        if packed is not None:
            try:
                job = await asyncio.to_thread(self._land, job, packed)
            except Exception as e:  # noqa: BLE001 - reported for this job; the node stays in use
                return Unrunnable(f"its task could not be unpacked on node {self.node_id()}: {e}")
        return await self.work(job)

    def _land(self, job, packed: bytes):
        task = job.task
        if task.content_hash not in self.tasks:
            self.tasks[task.content_hash] = land_task(task, packed)
        return dataclasses.replace(job, task=self.tasks[task.content_hash])

    async def close(self) -> None:
        close = getattr(self.work, "close", None)
        if close is not None:
            await close()


RemoteNodeWorker = ray.remote(num_cpus=0, max_restarts=0)(NodeWorker)


@dataclass
class _Actor:
    node_id: str
    handle: object
    busy: int = 0
    state: str = "starting"  # then "ready" once its hello said so, or "dead"
    hello: asyncio.Future | None = None


class _NodePool:
    """An actor on every alive node that has CPUs; nodes that join later get one at the next refresh.
    An actor takes jobs once its hello came back clean; a node whose hello names a problem, or whose
    worker failed to start 3 times, is left out of the run with the reason."""

    def __init__(self, work_ref, concurrency: int, say: Callable[[str], None], driver_code: str):
        self.work_ref, self.concurrency, self.say, self.driver_code = work_ref, concurrency, say, driver_code
        self.actors: dict[str, _Actor] = {}
        self.failed_starts: Counter[str] = Counter()
        self.left_out: dict[str, str] = {}  # node id -> why

    def refresh(self) -> None:
        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0}
        for node_id, actor in list(self.actors.items()):
            if node_id not in alive:
                self.lost(actor)  # its calls fail on their own; no new ones go there
        for node_id in sorted(alive - set(self.left_out)):  # a node whose worker died gets a new one
            if node_id not in self.actors or self.actors[node_id].state == "dead":
                self.actors[node_id] = _Actor(node_id, RemoteNodeWorker.options(
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                    max_concurrency=self.concurrency).remote(self.work_ref, self.driver_code))

    def starting(self) -> list[_Actor]:
        return [a for a in self.actors.values() if a.state == "starting"]

    def greeted(self, actor: _Actor) -> None:
        """The actor's hello came back: ready, left out with the reason, or failed to start."""
        if actor.state != "starting":
            return
        try:
            problem = actor.hello.result()
        except Exception as e:  # noqa: BLE001 - the worker died starting (import error, node lost)
            self.failed_starts[actor.node_id] += 1
            problem = f"its worker failed to start 3 times (last: {_brief(e)})" if self.failed_starts[actor.node_id] >= 3 else None
            actor.state = "dead"
            _kill(actor.handle)
        if problem:
            self.left_out[actor.node_id] = problem
            self.say(f"ray: node {actor.node_id[:12]} left out of this run: {problem}")
            actor.state = "dead"
            _kill(actor.handle)
        elif actor.state == "starting":
            actor.state = "ready"

    def free(self) -> _Actor | None:
        """The ready actor with the fewest jobs in flight, if it has room."""
        ready = [a for a in self.actors.values() if a.state == "ready" and a.busy < self.concurrency]
        return min(ready, key=lambda a: a.busy) if ready else None

    def busy(self) -> dict[str, int]:
        return {a.node_id: a.busy for a in list(self.actors.values()) if a.state == "ready"}

    def lost(self, actor: _Actor) -> None:
        if actor.state == "dead":
            return
        if actor.state == "ready":
            self.say(f"ray: lost the worker on node {actor.node_id[:12]}; its trials in flight run again")
        actor.state = "dead"
        _kill(actor.handle)

    def close(self) -> None:
        alive = [a for a in self.actors.values() if a.state != "dead"]
        try:
            ray.wait([a.handle.close.remote() for a in alive], num_returns=len(alive), timeout=10)
        except Exception:  # noqa: BLE001 - closing is best effort: the actors are killed next
            pass
        for a in alive:
            _kill(a.handle)


def _kill(handle) -> None:
    try:
        ray.kill(handle, no_restart=True)
    except Exception:  # noqa: BLE001 - already gone
        pass


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, concurrency: int, *, address: str | None = None, node_losses: int = 3,
                 wait_for_nodes: float = 120.0, refresh_seconds: float = 2.0, init_options: dict | None = None,
                 say: Callable[[str], None] | None = None, driver_code: str | None = None):
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
        self._pool: _NodePool | None = None

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
            code = self.driver_code or await asyncio.to_thread(code_hash)
            pool = self._pool = _NodePool(ray.put(work), self.concurrency, self.say, code)
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

    async def _dispatch(self, pool: _NodePool, work, jobs: list, before, after) -> list:
        results: list = [None] * len(jobs)
        queue = deque(range(len(jobs)))
        in_flight: dict[asyncio.Future, tuple[int, _Actor]] = {}
        started: set[int] = set()
        losses: Counter[int] = Counter()
        packed: dict[str, ray.ObjectRef] = {}  # task content hash -> its folder in the object store
        refreshed = idle_since = 0.0
        while queue or in_flight:
            now = time.monotonic()
            if now - refreshed >= self.refresh_seconds:
                await asyncio.to_thread(pool.refresh)
                refreshed = now
            for actor in pool.starting():
                if actor.hello is None:
                    actor.hello = asyncio.wrap_future(actor.handle.hello.remote().future())
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
            hellos = {a.hello: a for a in pool.starting()}
            if not in_flight and not hellos:
                idle_since = idle_since or now
                if now - idle_since > self.wait_for_nodes:
                    left_out = "".join(f"; node {n[:12]} left out: {why}" for n, why in pool.left_out.items())
                    raise AgentmillError(f"ray: no node to run on for {self.wait_for_nodes:g}s; {len(queue)} trial(s) "
                                         f"not run (they run on resume). Are the worker nodes up?{left_out}")
                await asyncio.sleep(0.5)
                refreshed = 0.0
                continue
            idle_since = 0.0
            done, _ = await asyncio.wait([*in_flight, *hellos], timeout=self.refresh_seconds,
                                         return_when=asyncio.FIRST_COMPLETED)
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
                    out = _failure(work, jobs[i], out.message)
                else:
                    self.ran_on[i] = actor.node_id
                results[i] = await after(jobs[i], out) if after is not None else out
        return results

    def _outcome(self, fut: asyncio.Future, i: int, actor: _Actor, pool: _NodePool, losses: Counter):
        """The job's result; an Unrunnable; or None when it must run again (its node died)."""
        try:
            return fut.result()
        except NODE_LOST as e:
            pool.lost(actor)
            losses[i] += 1
            if losses[i] < self.node_losses:
                return None
            return Unrunnable(f"its Ray node died {losses[i]} times while running it (last: {_brief(e)})")
        except ray.exceptions.RayTaskError as e:
            return Unrunnable(f"it raised on Ray node {actor.node_id[:12]}: {_brief(e)}")

    async def _files(self, job, packed: dict) -> ray.ObjectRef | None:
        """The job's task folder in the object store (packed once per task), or None for a job without one."""
        task = getattr(job, "task", None)
        if not isinstance(task, Task):
            return None
        if task.content_hash not in packed:
            packed[task.content_hash] = ray.put(await asyncio.to_thread(pack_task, task))
        return packed[task.content_hash]


def code_hash() -> str:
    """The installed agentmill code: every node must run exactly the driver's."""
    return hash_tree(Path(agentmill.__file__).parent)


def _failure(work, job, message: str):
    failure = getattr(work, "failure", None)
    if failure is None:
        raise AgentmillError(f"ray: a job could not run: {message}")
    return failure(job, message)


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


def _brief(e: BaseException) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}".strip()


EXECUTORS[RayExecutor.name] = RayExecutor
