"""Fewer round trips per terminal action, same keystrokes: a command's keys go in one tmux client
exec (a command sequence), text that ends in ';' still arrives whole, and a command's wait ends
when the shell's prompt is back (its duration is only an upper bound)."""

import asyncio
import time

from agentmill.sandbox import BwrapSandbox, TmuxSession
from agentmill.sandbox.tmux import last_line, prompt_returned
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, run

pytestmark = sandbox


class Counting:
    """Counts the sandbox execs a terminal makes (what crosses into the guest)."""

    capabilities = frozenset()  # no guest socket: every terminal action is an exec

    def __init__(self, sb):
        self.sb, self.execs = sb, []
        self.spec = sb.spec

    async def exec(self, cmd, **kw):
        self.execs.append(cmd)
        return await self.sb.exec(cmd, **kw)


async def _wait_for(term: TmuxSession, needle: str, seconds: float = 5.0) -> str:
    text = ""
    for _ in range(int(seconds / 0.05)):
        text = await term.history_text()
        if needle in text:
            break
        await asyncio.sleep(0.05)
    return text


def test_keys_of_a_command_go_in_one_exec_and_arrive_exactly():
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            counted = Counting(sb)
            term = TmuxSession(counted, cwd="/app")
            await term.start()
            counted.execs.clear()
            await term.send_keys("echo L1-$((1+1))\necho 'L2 ; x'\n")
            one_exec = len(counted.execs)
            # text ending in ';' or '\;' (find -exec) must not be read as tmux's separator
            await term.send_keys("echo semi\\;\n")
            await term.send_keys("echo A9; echo B9;\n")
            await term.send_keys(["echo K7", "Enter"])
            return one_exec, await _wait_for(term, "K7\n")

    one_exec, text = run(go())
    assert one_exec == 1
    for line in ("L1-2", "L2 ; x", "semi;", "A9", "B9", "K7"):
        assert f"\n{line}\n" in text, line


def test_wait_ends_when_the_prompt_is_back_and_at_the_duration_otherwise():
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/app")
            await term.start()
            before = await _wait_for(term, "#")
            prompt = last_line(before)
            await term.send_keys("sleep 0.3; echo finished-now\n")
            t = time.monotonic()
            done = await term.wait_for_prompt(prompt, before, 20)
            fast = time.monotonic() - t
            await term.send_keys("sleep 5\n")
            t = time.monotonic()
            timed_out = await term.wait_for_prompt(prompt, done, 0.6)
            slow = time.monotonic() - t
            return prompt, done, fast, timed_out, slow

    prompt, done, fast, timed_out, slow = run(go())
    assert prompt.rstrip().endswith("#") and done is not None and "\nfinished-now\n" in done
    assert 0.3 <= fast < 5, fast  # not the 20 s upper bound
    assert timed_out is None and 0.6 <= slow < 3


def test_prompt_returned_needs_a_finished_line_and_the_prompt():
    p = "root@box:/app#"
    before = f"{p}"
    assert not prompt_returned(p, before, before)  # nothing typed yet
    assert not prompt_returned(p, before, f"{p} sleep 3")  # typed, still running
    assert not prompt_returned(p, before, f"{p} sleep 3\nsome output")
    assert prompt_returned(p, before, f"{p} true\n{p}")
    assert not prompt_returned("", before, f"{p} true\n{p}")  # no known prompt: never early
    assert not prompt_returned(p, before, f"{p} cd /tmp\nroot@box:/tmp#")  # another prompt: wait it out
