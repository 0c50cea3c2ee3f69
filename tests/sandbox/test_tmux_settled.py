"""A look at the terminal after typing waits until the screen stops changing: the shell echoes typed
keys (and prints completions) after send-keys returns, slowest in a fresh shell, so a single look
catches however much had arrived, which differs run to run. The terminus agent takes its
observations this way when no prompt told it the command was done."""

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

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


@contextlib.contextmanager
def cpu_pressure(per_core: int = 4, seconds: int = 60):
    """Busy loops, `per_core` for every core, each ended by `timeout` even if this process dies."""
    busy = [  # each in a session of its own, so the loop goes with it (killing `timeout` alone orphans it)
        subprocess.Popen(["timeout", str(seconds), "sh", "-c", "while :; do :; done"], start_new_session=True)
        for _ in range(per_core * (os.cpu_count() or 1))
    ]
    try:
        yield [p.pid for p in busy]  # each loop's process group
    finally:
        for p in busy:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_a_settled_look_sees_every_typed_key_under_cpu_pressure():
    # the look waits for the typed text's echo, not for a quiet moment: under load a fresh shell can
    # stay silent for longer than the quiet interval before it echoes (planted: no echo wait, it failed)
    async def go():
        seen = []
        for _ in range(6):
            async with BwrapSandbox(fresh_spec()) as sb:
                term = TmuxSession(sb, cwd="/tmp")
                await term.start()
                await term.send_keys(TYPED)
                seen.append(await term.settled_history())
        return seen

    with cpu_pressure():
        for text in run(go()):
            assert TYPED[5:] in text.replace("\n", ""), text[-200:]


def test_a_look_after_keys_that_echo_nothing_waits_a_bounded_time():
    # honest twin of the wait: text typed where nothing echoes (a silent read) costs at most echo_within
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/tmp")
            await term.start()
            await term.send_keys("read -s secret\n")
            await term.settled_history()
            await term.send_keys("hunter2")
            loop = asyncio.get_running_loop()
            t = loop.time()
            text = await term.settled_history(echo_within=0.4)
            return loop.time() - t, text

    took, text = run(go())
    assert 0.4 <= took < 2.0 and "hunter2" not in text


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


def _running_in_group(pgid: int) -> list[int]:
    """Processes of a process group that still run (a killed loop may linger as a zombie: not running)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(stat.parent.name))
    return found


def test_cpu_pressure_leaves_no_busy_loop_behind():
    """The pressure is bounded: once the block ends, no loop of it runs on (planted: killing only
    `timeout`, as before, left its shell spinning for the rest of the suite). Only the block's own
    process groups are looked at: other tests' sandboxes may run loops of their own."""
    with cpu_pressure(per_core=1, seconds=30) as groups:
        assert all(_running_in_group(g) for g in groups)  # the check sees a running loop
    # a SIGKILLed loop is gone once the kernel has delivered the signal, which on a loaded machine
    # can take a moment after the group leader is reaped: look until a deadline well under the 30 s
    deadline = time.monotonic() + 5
    while (left := [g for g in groups if _running_in_group(g)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []
