"""The agent against the terminal's control channel. Its commands run in the same tmux, as root in
the sandbox: it may kill or detach the control client, rename the session, turn the client's output
back on and flood it, or freeze tmux. The harness must then record exactly what a client exec would
have captured (falling back to execs), or fail typed; never hang, never type keys twice."""

import asyncio
import time

import pytest

from agentmill.errors import SandboxError
from agentmill.sandbox import BwrapSandbox, TmuxSession
from agentmill.sandbox.tmux import SOCKET, last_line
from agentmill.verify import Outcome
from tests.agents.test_terminus import run_terminus
from tests.conftest import sandbox
from tests.helpers.chat_server import Reply, queue, terminus_json
from tests.sandbox.helpers import fresh_spec, run
from tests.sandbox.test_tmux_channel import _settled

pytestmark = sandbox

T = f"tmux -S {SOCKET}"
OUR_CLIENT = f"$({T} list-clients -F '#{{client_name}} #{{client_pid}} #{{client_flags}}' | grep control-mode | head -1"
KILL_CLIENT = f"kill -9 {OUR_CLIENT} | cut -d' ' -f2)"
ATTACKS = {
    "kill the control client": KILL_CLIENT,
    "detach every client of the session": f"{T} detach-client -s main",
    "turn its output on and flood it": f"{T} refresh-client -t {OUR_CLIENT} | cut -d' ' -f1) -f '!no-output'; "
    "seq 1 200000; printf '%%end 1 2 1\\n\\033]2;%%exit\\007\\n'",
}


async def _type_and_settle(term: TmuxSession, keys: str) -> str:
    """Type a one-line command and wait until its prompt is back below its output."""
    before = await _settled(term)
    await term.send_keys(keys)
    after = await term.wait_for_prompt(last_line(before), before, 60)
    assert after is not None, keys
    return after


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_after_the_attack_every_capture_is_what_an_exec_captures(attack):
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/app")
            plain = TmuxSession(sb, cwd="/app", channel=False)
            await term.start()
            assert term.transport == "channel"
            t = time.monotonic()
            await _type_and_settle(term, ATTACKS[attack] + "\n")
            after_attack = await term.history_text(), await plain.history_text()
            text = await _type_and_settle(term, "echo still-typed-once\n")
            screens = await term.screen(), await plain.screen()
            return term.transport, term.channel_note, after_attack, text, screens, time.monotonic() - t

    transport, note, (seen, by_exec), text, (screen, screen_by_exec), seconds = run(go())
    assert seen == by_exec and screen == screen_by_exec
    assert text.count("\nstill-typed-once\n") == 1
    if attack != "turn its output on and flood it":  # a flood may or may not outlast the channel's limits
        assert transport == "exec" and note.startswith("lost: "), note
    assert seconds < 60


def test_a_renamed_session_fails_the_same_way_on_both_paths():
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/app")
            await term.start()
            await term.send_keys(f"{T} rename-session -t main other\n")
            await asyncio.sleep(0.5)
            errors = []
            for t in (term, TmuxSession(sb, channel=False)):
                with pytest.raises(SandboxError) as e:
                    await t.history_text()
                errors.append(str(e.value))
            return errors

    via_channel, via_exec = run(go())
    assert via_channel == via_exec and "can't find" in via_channel


def test_keys_whose_fate_is_unknown_are_never_typed_again():
    """tmux frozen while keys are on their way: the channel gives up after the timeout and the
    call fails (SandboxError: after the agent acted, the trial is the agent's error), without
    retyping the keys by exec."""

    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/app")
            await term.start()
            await _settled(term)
            pid = (await term._exec(("display-message", "-p", "#{pid}"))).strip()
            await sb.exec(["kill", "-STOP", pid])
            try:
                with pytest.raises(SandboxError, match="control channel was lost"):
                    await term._run(
                        ("send-keys", "-t", "main", "-l", "echo typed-q7"),
                        ("send-keys", "-t", "main", "Enter"),
                        timeout=0.5,
                        effects=True,
                    )
            finally:
                await sb.exec(["kill", "-CONT", pid])
            await asyncio.sleep(0.5)
            return term.transport, await term.history_text()

    transport, text = run(go())
    assert transport == "exec"
    assert text.count("echo typed-q7") <= 1  # typed by the frozen server later, or never: not twice


def test_a_trial_whose_agent_kills_the_control_client_goes_on_and_passes(tmp_path):
    policy = queue(
        Reply(terminus_json([(KILL_CLIENT + "; echo killed-it\n", 2)])),
        Reply(terminus_json([("echo hello > /app/out.txt; echo wrote-it\n", 2)])),
        Reply(terminus_json(complete=True)),
        Reply(terminus_json(complete=True)),
    )
    trial, result, requests = run_terminus(tmp_path, policy)
    assert trial.outcome is Outcome.PASSED, trial.exception
    observations = [r["messages"][-1]["content"] for r in requests[1:3]]
    assert "\nkilled-it" in observations[0] and "\nwrote-it" in observations[1]
