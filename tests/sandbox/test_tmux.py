import asyncio

from agentmill.sandbox import BwrapSandbox, TmuxSession
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, run

pytestmark = sandbox


async def _poll(term: TmuxSession, needle: str, seconds: float = 5.0) -> str:
    screen = ""
    for _ in range(int(seconds / 0.05)):
        screen = await term.screen()
        if needle in screen:
            break
        await asyncio.sleep(0.05)
    return screen


def test_terminal_keeps_state_and_reads_back_the_screen():
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/app")
            await term.start()
            await term.send_keys("cd /app && export GREETING=hi && echo value-$((6*7)) > f\n")
            await term.send_keys("cat f; echo $GREETING-there\n")
            screen = await _poll(term, "hi-there")
            await term.send_keys(["sleep 30", "Enter"])
            await asyncio.sleep(0.2)
            await term.send_keys(["C-c"])
            await term.send_keys("echo after-interrupt\n")
            after = await _poll(term, "after-interrupt\n")
            return screen, after

    screen, after = run(go())
    assert "value-42" in screen and "hi-there" in screen
    assert "^C" in after and "after-interrupt" in after


def test_run_and_wait_blocks_until_done():
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb)
            await term.start()
            finished = await term.run_and_wait("sleep 0.3; echo done > /app/marker", timeout=10)
            marker = await sb.read_file("/app/marker")
            timed = await term.run_and_wait("sleep 20", timeout=0.5)
            return finished, marker, timed

    finished, marker, timed = run(go())
    assert finished and marker == b"done\n" and timed is False
