"""The Ray side of the Ray executor: one worker actor per node, and the driver's pool of them.

A worker holds the shipped `work` (for trials: a client to the same endpoint and the node's own
image cache) and runs up to `concurrency` jobs at once; it never touches the driver's run folder.
It takes jobs only after its hello came back clean (same agentmill code as the driver, verifier
toolkit built on its node).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import agentmill
from agentmill.errors import AgentmillError
from agentmill.rollout.executors.task_files import PackedTask, land_task
from agentmill.rollout.runner import require_toolkit
from agentmill.tasks.hashing import hash_tree
from agentmill.tasks.model import Task


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
        mine = await asyncio.to_thread(code_hash)
        if mine != self.driver_code:
            return (
                f"its agentmill code differs from the driver's (code hash {mine[:12]}, driver {self.driver_code[:12]}): "
                "install the same checkout on every node"
            )
        try:
            await asyncio.to_thread(require_toolkit)  # built once per machine, from PyPI
        except AgentmillError as e:
            return str(e)
        return None

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def run(self, job, packed: PackedTask | None):
        if packed is not None:
            try:
                job = await asyncio.to_thread(self._land, job, packed)
            except Exception as e:  # noqa: BLE001 - reported for this job; the node stays in use
                return Unrunnable(f"its task could not be unpacked on node {self.node_id()}: {e}")
        return await self.work(job)

    def _land(self, job, packed: PackedTask):
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
class NodeActor:
    node_id: str
    handle: Any  # a Ray actor handle: its methods are remote calls, untyped
    busy: int = 0
    state: str = "starting"  # then "ready" once its hello said so, or "dead"
    hello: asyncio.Future | None = None


class NodePool:
    """An actor on every alive node that has CPUs; nodes that join later get one at the next refresh.
    An actor takes jobs once its hello came back clean; a node whose hello names a problem, or whose
    worker failed to start 3 times, is left out of the run with the reason."""

    def __init__(self, work_ref, concurrency: int, say: Callable[[str], None], driver_code: str):
        self.work_ref, self.concurrency, self.say, self.driver_code = work_ref, concurrency, say, driver_code
        self.actors: dict[str, NodeActor] = {}
        self.failed_starts: Counter[str] = Counter()
        self.left_out: dict[str, str] = {}  # node id -> why

    def refresh(self) -> None:
        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0}
        for node_id, actor in list(self.actors.items()):
            if node_id not in alive:
                self.lost(actor)  # its calls fail on their own; no new ones go there
        for node_id in sorted(alive - set(self.left_out)):  # a node whose worker died gets a new one
            if node_id not in self.actors or self.actors[node_id].state == "dead":
                self.actors[node_id] = NodeActor(
                    node_id,
                    RemoteNodeWorker.options(
                        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                        max_concurrency=self.concurrency,
                    ).remote(self.work_ref, self.driver_code),
                )

    def starting(self) -> list[NodeActor]:
        return [a for a in self.actors.values() if a.state == "starting"]

    def greeted(self, actor: NodeActor) -> None:
        """The actor's hello came back: ready, left out with the reason, or failed to start."""
        if actor.state != "starting":
            return
        try:
            problem = cast(asyncio.Future, actor.hello).result()  # greeted once its hello came back
        except Exception as e:  # noqa: BLE001 - the worker died starting (import error, node lost)
            self.failed_starts[actor.node_id] += 1
            problem = (
                f"its worker failed to start 3 times (last: {brief_error(e)})"
                if self.failed_starts[actor.node_id] >= 3
                else None
            )
            actor.state = "dead"
            _kill(actor.handle)
        if problem:
            self.left_out[actor.node_id] = problem
            self.say(f"ray: node {actor.node_id[:12]} left out of this run: {problem}")
            actor.state = "dead"
            _kill(actor.handle)
        elif actor.state == "starting":
            actor.state = "ready"

    def free(self) -> NodeActor | None:
        """The ready actor with the fewest jobs in flight, if it has room."""
        ready = [a for a in self.actors.values() if a.state == "ready" and a.busy < self.concurrency]
        return min(ready, key=lambda a: a.busy) if ready else None

    def busy(self) -> dict[str, int]:
        return {a.node_id: a.busy for a in list(self.actors.values()) if a.state == "ready"}

    def lost(self, actor: NodeActor) -> None:
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


def code_hash() -> str:
    """The installed agentmill code: every node must run exactly the driver's."""
    return hash_tree(Path(agentmill.__file__).parent)


def brief_error(e: BaseException) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}".strip()
