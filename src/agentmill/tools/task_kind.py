"""Tool tasks (stateful SQLite gyms): the databases are built in a tool host's own sandbox before the
agent (out of the agent's reach), verified by SQL state, judge and tool-call verifiers, the oracle replays the reference calls, and
`check` adds lints and negative verification by mutation."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from agentmill.tasks.behaviour import KindBehaviour, KindTrial
from agentmill.tools import open_tool_session
from agentmill.tools.state import ToolEnvError
from agentmill.tools.tool_host import attach, start_tool_host


class ToolsTrial(KindTrial):
    """A tool host in a sandbox of its own holds the trial's databases (tools/tool_host.py): the agent's
    tool sessions are routed to it, and the verifier reads the end state from its filesystem."""

    def __init__(self, task, host, rootfs):
        self.task, self.host, self.rootfs = task, host, rootfs

    def attach(self, sandbox) -> None:
        attach(sandbox, self.host)

    async def verify(self, task, image, rootfs, scratch, limits, steps):
        from agentmill.verify.sql_state import verify_tool_task

        return await verify_tool_task(task, image, self.rootfs, scratch, limits, steps)

    async def stop(self) -> None:
        await self.host.stop()  # idempotent


class ToolsBehaviour(KindBehaviour):
    prepared_before_agent = True
    audits = True
    task_faults: ClassVar[tuple[type[BaseException], ...]] = (ToolEnvError,)  # the gym, its tools or seed

    async def build(self, task) -> list[str]:
        return []  # no test scripts: the verifiers are SQL over the tool host's databases

    async def begin(self, task, image, scratch, limits) -> ToolsTrial:
        rootfs = await asyncio.to_thread(image.instantiate, scratch / "tools-rootfs")  # cp -a: off the loop
        return ToolsTrial(task, await start_tool_host(task, image, rootfs, limits), rootfs)

    async def oracle(self, task, sandbox, result) -> bool:
        from agentmill.agents.tool_replay import replay_reference  # at call time: agents sit above tools

        async with open_tool_session(task, sandbox) as session:  # solution/calls.json through the tools
            await replay_reference(task, session, result)
        return True

    async def audit(self, task, builder):
        from agentmill.verify.mutation import audit_tool_task

        return await audit_tool_task(task, builder=builder)


TOOLS = ToolsBehaviour()
