"""A look at the terminal after typing waits until the screen stops changing: the shell echoes typed
keys (and prints completions) after send-keys returns, slowest in a fresh shell, so a single look
catches however much had arrived, which differs run to run. The terminus agent takes its
observations this way when no prompt told it the command was done."""

import asyncio

from agentmill.sandbox import BwrapSandbox, TmuxSession
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, run

pytestmark = sandbox
TYPED = "echo " + "x" * 3000 + "END"


def test_a_settled_look_sees_every_typed_key_of_a_fresh_shell():
    async def go():
        seen = []
        for _ in range(3):
            async with BwrapSandbox(fresh_spec()) as sb:
                term = TmuxSession(sb, cwd="/tmp")
                await term.start()
                await term.send_keys(TYPED)
                seen.append(await term.settled_history())
        return seen

    for text in run(go()):
        assert TYPED[5:] in text.replace("\n", ""), text[-200:]


def test_a_settled_look_gives_up_on_a_screen_that_keeps_changing():
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/tmp")
            await term.start()
            await term.send_keys("while :; do date +%s%N; sleep 0.005; done\n")
            loop = asyncio.get_running_loop()
            t = loop.time()
            await term.settled_history(at_most=0.3)
            return loop.time() - t

    assert run(go()) < 1.5
