"""Tool tasks (stateful SQLite gyms): the databases are built in the agent's sandbox before the agent,
verified by SQL state, judge and tool-call verifiers, the oracle replays the reference calls, and
`check` adds lints and negative verification by mutation."""

from __future__ import annotations

from typing import ClassVar

from agentmill.agents.tool_replay import replay_reference
from agentmill.envs import open_tool_session
from agentmill.envs.state import ToolEnvError, prepare_tool_state
from agentmill.tasks.behaviour import KindBehaviour, KindTrial


class ToolsTrial(KindTrial):
    def __init__(self, task):
        self.task = task

    async def prepare(self, sandbox) -> None:
        await prepare_tool_state(self.task, sandbox)

    async def verify(self, task, image, rootfs, scratch, limits, steps):
        from agentmill.verify.sql_state import verify_tool_task

        return await verify_tool_task(task, image, rootfs, scratch, limits, steps)


class ToolsBehaviour(KindBehaviour):
    prepared_before_agent = True
    audits = True
    task_faults: ClassVar[tuple[type[BaseException], ...]] = (ToolEnvError,)  # the gym, its tools or seed

    async def begin(self, task, image, scratch, limits) -> ToolsTrial:
        return ToolsTrial(task)

    async def oracle(self, task, sandbox, result) -> bool:
        async with open_tool_session(task, sandbox) as session:  # solution/calls.json through the tools
            await replay_reference(task, session, result)
        return True

    async def audit(self, task, builder):
        from agentmill.verify.mutation import audit_tool_task

        return await audit_tool_task(task, builder=builder)


TOOLS = ToolsBehaviour()
