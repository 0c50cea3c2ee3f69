"""A task kind's behaviour in a trial: the hooks a new kind overrides, with a terminal task's defaults.

Adding a kind is one module: a `KindBehaviour` subclass, and a `TaskKind` (tasks/kinds.py) whose
`behaviour` names it (tool tasks: tools/task_kind.py). The trial (rollout/trial.py) asks the kind to `begin` its part of a trial (a `KindTrial`: attach,
prepare, verify, stop); the oracle (agents/oracle.py), the early start (rollout/early.py) and `check`
(rollout/check.py) call the other hooks; none of them branches on a kind's name.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentmill.registry import load_target
from agentmill.tasks.kinds import KINDS

if TYPE_CHECKING:
    from agentmill.agents.base import AgentResult
    from agentmill.sandbox.protocol import Limits, Sandbox
    from agentmill.tasks.model import Task
    from agentmill.traces.atif import Step
    from agentmill.verify.test_script import VerifierResult


class KindTrial:
    """One trial's kind-specific part, from before the agent's sandbox starts until after verification.
    The defaults are a terminal task's: nothing to attach or prepare, `tests/test.sh` in a fresh
    verifier sandbox (then the family's judged step, if any)."""

    def attach(self, sandbox: Sandbox) -> None:
        """Before the agent's sandbox starts (e.g. route its tool sessions to a tool host)."""

    async def prepare(self, sandbox: Sandbox) -> None:
        """In the started agent sandbox, before the agent begins."""

    async def verify(
        self, task: Task, image: Any, rootfs: Path, scratch: Path, limits: Limits, steps: list[Step]
    ) -> VerifierResult:
        from agentmill.verify.judged import judged_step_for  # at call time: the verifier sits above tasks
        from agentmill.verify.test_script import verify

        verdict = await verify(task, image, rootfs, scratch, limits)
        judged = judged_step_for(task)  # e.g. grounded tasks: the rubric judge over the deliverables
        return await judged(task, verdict) if judged is not None else verdict

    async def stop(self) -> None:
        """When the agent has finished (before verification), and on every early return: idempotent."""


class KindBehaviour:
    """What a kind does: `begin` a trial's part, the oracle's own way, `check`'s extra audit."""

    # The agent's sandbox is started and prepared before the agent begins: no first turn asked while it
    # starts (rollout/early.py), no one-command sandbox (sandbox/command.py).
    prepared_before_agent: ClassVar[bool] = False
    # Exceptions from `begin`/`prepare` that mean the task itself is broken (task_error), not the harness.
    task_faults: ClassVar[tuple[type[BaseException], ...]] = ()
    audits: ClassVar[bool] = False  # `check` runs `audit` beyond the oracle and nop trials

    async def build(self, task: Task) -> list[str]:
        """What the kind resolves with the environment's build, with the network as a build step has it;
        returns notes for the trial. A terminal task: the packages its test scripts install
        (verify/test_deps.py), into a cached layer the verifier mounts offline."""
        import asyncio

        from agentmill.verify.test_deps import prepare  # at call time: the verifier sits above tasks

        return (await asyncio.to_thread(prepare, task))[1]

    async def begin(self, task: Task, image: Any, scratch: Path, limits: Limits) -> KindTrial:
        """This trial's part, set up before the agent's sandbox (e.g. a tool host with its databases)."""
        return KindTrial()

    async def oracle(self, task: Task, sandbox: Sandbox, result: AgentResult) -> bool:
        """Run the reference solution this kind's own way; False: the oracle runs `solve.sh`."""
        return False

    async def audit(self, task: Task, builder: Any) -> Any:
        """`check`'s extra audit of the task beyond oracle and nop (None: nothing more)."""
        return None


TERMINAL = KindBehaviour()
_loaded: dict[str, KindBehaviour] = {}


def behaviour_for(task: Task) -> KindBehaviour:
    """The behaviour the task's kind names (a kind that names none behaves as a terminal task)."""
    name = getattr(task, "kind", None) or "terminal"
    if name not in _loaded:
        target = KINDS.get(name).behaviour if name in KINDS else None
        _loaded[name] = load_target(target) if target else TERMINAL  # type: ignore[assignment]
    return _loaded[name]
