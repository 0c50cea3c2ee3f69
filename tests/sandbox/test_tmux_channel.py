"""The tmux control-mode channel: the agent's terminal read and typed over one attached control
client gives exactly the bytes the client-exec path gives, in one request per action, without
touching the window's size; and it falls back to execs when it cannot be opened."""

import asyncio

import pytest

from agentmill.errors import SandboxError
from agentmill.sandbox import BwrapSandbox, TmuxSession
from agentmill.sandbox import tmux as tmux_module
from agentmill.sandbox.protocol import Capability
from agentmill.sandbox.tmux import last_line
from agentmill.sandbox.tmux_channel import (
    ChannelLostError,
    NotSendableError,
    TmuxCommandError,
    parse_reply,
    quote,
    request_lines,
)
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, run

# What an agent may type: ';'-ended arguments (tmux's separator), quotes and tmux's own syntax
# characters, unicode, escape sequences, forged control-mode lines, long output and long lines.
KEYSTROKES = [
    "echo a;\n",
    "find /app -maxdepth 0 -exec echo found {} \\;\n",
    "echo '\\;' ';' \\; end\\;\n",
    "echo \"it's\" \"dq\" \\\\ $HOME ~ '#{pane_id}' '{' '}' '$(x)' '%if' \"'\"\n",
    "echo 'héllo wörld 日本語 🎉 e\u0301 ﷽'\n",
    "printf '\\033[31mred\\033[0m\\ttab\\033]2;title\\007 end\\n'\n",
    # tmux passthrough (DCS), an OSC title holding a forged line, the alternate screen in and out
    "printf '\\033Ptmux;\\033\\033]2;%%end 1 2 1\\007\\033\\\\ \\033]0;a\\nb\\007 \\033[?1049halt\\033[?1049l back\\n'\n",
    "printf '%%end 1796288879 266 1\\n%%begin 1 2 1\\n%%error 1 2 1\\n%%exit\\nagentmill-0-b\\n'\n",
    "echo $'\\x01\\x7f'ctl; echo -e '\\xff\\xfe bad-utf8'\n",
    "seq 1 2500\n",
    "printf 'y%.0s' $(seq 1 3000); echo\n",
    "echo " + "z" * 5000 + "\n",
    ["echo K7", "Enter"],
    "echo cr-typed\r",
    ["C-c"],
]


async def _type_all(term: TmuxSession, keys_list) -> list[str]:
    """Type each command and wait for its prompt (so type-ahead never races the output); return
    the scrollback after each."""
    seen = []
    before = await _settled(term)
    for keys in keys_list:
        await term.send_keys(keys)
        after = await term.wait_for_prompt(last_line(before), before, 15)
        if after is None:  # C-c on an idle prompt: a fresh prompt line, compared all the same
            await asyncio.sleep(0.3)
            after = await term.history_text()
        seen.append(after)
        before = after
    return seen


async def _settled(term: TmuxSession) -> str:
    for _ in range(200):
        text = await term.history_text()
        if last_line(text).rstrip().endswith("#"):
            return text
        await asyncio.sleep(0.02)
    raise AssertionError("no prompt")


async def _wait_for(term: TmuxSession, needle: str) -> str:
    text = ""
    for _ in range(250):
        text = await term.history_text()
        if needle in text:
            break
        await asyncio.sleep(0.02)
    return text


async def _both_ways(sb, term: TmuxSession) -> list[str]:
    """The same captures through the channel and through a client exec, at the same moment."""
    plain = TmuxSession(sb, cwd="/app", channel=False)
    out = []
    for capture in ("screen", "history_text"):
        via_channel, via_exec = await getattr(term, capture)(), await getattr(plain, capture)()
        assert via_channel == via_exec, capture
        out.append(via_channel)
    for lines in (1, 10, 5000):
        via_channel = await term.history_text(lines)
        assert via_channel == await plain.history_text(lines), lines
    return [*out, via_channel]


@sandbox
def test_channel_and_exec_capture_the_same_bytes_for_what_an_agent_types():
    async def typed(channel: bool):
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/app", channel=channel)
            await term.start()
            assert term.transport == ("channel" if channel else "exec"), term.channel_note
            steps = await _type_all(term, KEYSTROKES)
            final = (
                await _both_ways(sb, term)
                if channel
                else [await term.screen(), await term.history_text(), await term.history_text(5000)]
            )
            plain = TmuxSession(sb, channel=False)
            size = await plain._run(("display-message", "-p", "-t", "main", "#{window_width}x#{window_height}"))
            # the session the control client created is the one an exec creates: options, environment, pane
            made = [
                await plain._run(c)
                for c in (
                    ("show-options", "-t", "main"),
                    ("show-options", "-w", "-t", "main"),
                    ("show-environment", "-t", "main"),
                    ("show-environment", "-g"),
                    (
                        "display-message",
                        "-p",
                        "-t",
                        "main",
                        "#{pane_width}x#{pane_height} #{history_limit} #{pane_current_path} "
                        "#{session_name} #{window_index} #{pane_index} #{pane_start_command}",
                    ),
                )
            ]
            assert term.transport == ("channel" if channel else "exec")
            return steps, final, size, made

    (steps_c, final_c, size_c, made_c), (steps_e, final_e, size_e, made_e) = run(typed(True)), run(typed(False))
    assert made_c == made_e
    assert steps_c == steps_e  # every scrollback the agent would have seen, byte for byte
    assert final_c == final_e
    assert size_c == size_e == "160x48\n"  # the attached control client never resized the window
    history = "\n".join(steps_c)  # (the first pane keeps tmux's default 2000 lines of history)
    for typed_and_shown in (
        "# echo a;\na\n",
        "found /app\n",
        "end\\;\n\\; ; ; end;\n",
        "\nit's dq \\ /root /root #{pane_id} { } $(x) %if '\n",
        "\nhéllo wörld 日本語 🎉 ",
        "\n%end 1796288879 266 1\n",
        "\nagentmill-0-b\n",
        "\n2500\n",
        "\nK7\n",
        "\ncr-typed\n",
    ):
        assert typed_and_shown in history, typed_and_shown
    assert "y" * 3000 in history and "z" * 5000 in history


@sandbox
def test_an_action_is_one_request_on_the_channel_and_no_exec():
    class Counting:
        capabilities = frozenset({Capability.GUEST_SOCKET})

        def __init__(self, sb):
            self.sb, self.execs, self.spec, self.guest_socket = sb, [], sb.spec, sb.guest_socket

        def base_env(self):
            return self.sb.base_env()

        async def exec(self, cmd, **kw):
            self.execs.append(cmd)
            return await self.sb.exec(cmd, **kw)

    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            counted = Counting(sb)
            term = TmuxSession(counted, cwd="/app")
            await term.start()
            start_execs = len(counted.execs)
            requests = []
            real_run = term._channel.run

            async def spy(commands, timeout):
                requests.append(commands)
                return await real_run(commands, timeout)

            term._channel.run = spy
            await term.send_keys("echo L1\necho L2;\n")
            await _settled(term)
            await term.history_text()
            return start_execs, counted.execs[start_execs:], requests

    start_execs, later_execs, requests = run(go())
    assert start_execs == 0  # the control client, started by the guest, creates the session itself
    assert later_execs == []
    assert [c[0] for c in requests[0]] == ["send-keys"] * 4  # L1, Enter, L2;, Enter in one request
    assert requests[0][2][-1] == "echo L2;"


OLD_TMUX = """#!/bin/sh
# tmux before 3.2: attach-session has no -f (client flags); everything else is the real tmux
for a in "$@"; do [ "$a" = -f ] && [ "$prev" = attach-session ] && {
  echo "usage: attach-session [-dErx] [-c working-directory] [-t target-session]" >&2; exit 1; }; prev=$a; done
exec /usr/bin/tmux "$@"
"""


@sandbox
@pytest.mark.parametrize("case", ["older tmux", "no ignore-size"])
def test_a_tmux_that_cannot_attach_as_asked_leaves_the_session_on_execs(monkeypatch, case):
    spec = fresh_spec()
    if case == "older tmux":
        (spec.rootfs / "app" / "bin").mkdir()
        (spec.rootfs / "app" / "bin" / "tmux").write_text(OLD_TMUX)
        (spec.rootfs / "app" / "bin" / "tmux").chmod(0o755)
        spec.env["PATH"] = "/app/bin:/usr/local/bin:/usr/bin:/bin"
    else:  # a client that would take part in sizing the window: refused after the probe
        monkeypatch.setattr(tmux_module, "CLIENT_FLAGS", "no-output")

    async def go():
        async with BwrapSandbox(spec) as sb:
            term = TmuxSession(sb, cwd="/app")
            await term.start()
            await term.send_keys("echo fell-back\n")
            text = await _wait_for(term, "\nfell-back\n")
            clients = await term._exec(("list-clients", "-F", "#{client_flags}"))
            size = await term._exec(("display-message", "-p", "-t", "main", "#{window_width}x#{window_height}"))
            return term.transport, term.channel_note, text, clients, size

    transport, note, text, clients, size = run(go())
    assert transport == "exec", note
    assert ("attach failed: the tmux client exited" if case == "older tmux" else "not as asked") in note, note
    assert "\nfell-back\n" in text and size == "160x48\n"
    assert "control-mode" not in clients  # a refused client is not left attached


@sandbox
def test_the_channel_is_off_by_switch_and_on_other_backends(monkeypatch):
    monkeypatch.setenv("AGENTMILL_TMUX_CHANNEL", "0")

    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            off = TmuxSession(sb, cwd="/app")
            await off.start()
            return off.transport, off.channel_note

    assert run(go()) == ("exec", "off")


@sandbox
def test_tmux_errors_read_the_same_on_both_paths():
    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            term = TmuxSession(sb, cwd="/app")
            await term.start()
            errors = []
            for t in (term, TmuxSession(sb, channel=False)):
                with pytest.raises(SandboxError) as e:
                    await t._run(("capture-pane", "-p", "-t", "no-such-session"))
                errors.append(str(e.value))
            return term.transport, errors

    transport, (via_channel, via_exec) = run(go())
    assert transport == "channel"  # an error answer does not close the channel
    assert via_channel == via_exec and "can't find" in via_channel


# -- the framing, on answers shaped as tmux shapes them -------------------------------------------


def _answer(nonce: str, blocks: list[tuple[list[bytes], bool]], between: list[bytes] = ()) -> bytes:
    lines = [b"%begin 5 10 1", f"agentmill-{nonce}-a".encode(), b"%end 5 10 1", *between]
    for k, (content, ok) in enumerate(blocks):
        guard = f"5 {11 + k} 1".encode()
        lines += [b"%begin " + guard, *content, (b"%end " if ok else b"%error ") + guard]
        if not ok:
            break
    else:  # the first line's closing mark, unless an error stopped it
        lines += [b"%begin 5 30 1", f"agentmill-{nonce}-c".encode(), b"%end 5 30 1"]
    lines += [b"%window-renamed @0 bash", b"%begin 6 20 1", f"agentmill-{nonce}-b".encode(), b"%end 6 20 1", b""]
    return b"\n".join(lines)


def test_output_with_forged_guard_lines_is_kept_whole():
    forged = [b"$ echo", b"%end 5 11 1", b"%error 5 11 1", b"%begin 5 12 1", b"agentmill-n-a", b"%end 5 11 1", b"tail"]
    data = _answer("n", [(forged, True)], between=[b"%session-changed $1 x", b"%end 5 11 1"])
    assert parse_reply(data, "n", 1) == "\n".join(x.decode() for x in forged) + "\n"


def test_lines_between_the_two_request_lines_cannot_extend_an_output():
    # were a notification to carry a raw newline and the output block's exact guard, it would come
    # after the first line's closing mark (the first line is answered at once): it is not read as output
    data = _answer("n", [([b"screen"], True)]).replace(b"%window-renamed @0 bash", b"x\n%end 5 11 1")
    assert parse_reply(data, "n", 1) == "screen\n"


def test_errors_notifications_and_shape_problems():
    assert parse_reply(_answer("n", [([], True), ([], True)]), "n", 2) == ""
    with pytest.raises(TmuxCommandError, match="can't find pane: x"):
        parse_reply(_answer("n", [([], True), ([b"can't find pane: x"], False)]), "n", 3)
    with pytest.raises(ChannelLostError):  # fewer answers than commands, without an error
        parse_reply(_answer("n", [([], True)]), "n", 2)
    with pytest.raises(ChannelLostError):  # another request's marks
        parse_reply(_answer("other", [([], True)]), "n", 1)
    assert parse_reply(_answer("n", [([b""], True)]), "n", 1) == "\n"  # an empty capture is one newline, as by exec


def test_arguments_are_quoted_whole_and_unsendable_ones_refused():
    assert quote("a;") == "'a;'" and quote("it's") == "'it'\\''s'" and quote("") == "''"
    for bad in ("a\nb", "a\0b"):
        with pytest.raises(NotSendableError):
            quote(bad)
    with pytest.raises(NotSendableError):
        request_lines([("send-keys", "-l", "\udc80")], "n")
    assert request_lines([("send-keys", "-t", "main", "-l", "x ; y")], "n").count(b"\n") == 2


# -- reading answers off a real socket, from a scripted peer standing where tmux stands -------------


def _with_peer(answer_for, requests: int = 1, piece: int = 7):
    """A TmuxChannel on one end of a socketpair; the peer reads each request's nonce and writes
    answer_for(nonce, k) back in `piece`-byte pieces. Returns each request's result or exception."""
    import re
    import socket

    from agentmill.sandbox.tmux_channel import TmuxChannel

    async def go():
        ours, peer = socket.socketpair()
        peer.setblocking(False)
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        channel = TmuxChannel(reader, writer)
        loop = asyncio.get_running_loop()

        async def serve():
            got = b""
            for k in range(requests):
                while len(re.findall(rb"agentmill-([0-9a-f]+)-b\n", got)) <= k:
                    got += await loop.sock_recv(peer, 65536)
                nonce = re.findall(rb"agentmill-([0-9a-f]+)-b\n", got)[k].decode()
                data = answer_for(nonce, k)
                for i in range(0, len(data), piece):
                    await loop.sock_sendall(peer, data[i : i + piece])
                    if piece < 64:  # each piece its own arrival
                        await asyncio.sleep(0.0005)

        server = asyncio.create_task(serve())
        results = []
        for _ in range(requests):
            try:
                results.append(await channel.run([("capture-pane", "-p")], 10))
            except Exception as e:  # noqa: BLE001 - returned for the test to look at
                results.append(e)
        alive = channel.alive
        server.cancel()
        peer.close()
        return results, alive, channel

    return run(go())


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_answers_in_small_pieces_with_notifications_left_for_the_next(piece):
    def answer(nonce, k):  # each answer is followed by half a notification, finished in the next
        lead = b"1 x\n" if k else b""
        return lead + _answer(nonce, [([f"screen {k}".encode(), b"%end 5 11 1"], True)]) + b"%window-renamed @0"

    results, alive, _ = _with_peer(answer, requests=3, piece=piece)
    assert results == ["screen 0\n%end 5 11 1\n", "screen 1\n%end 5 11 1\n", "screen 2\n%end 5 11 1\n"]
    assert alive


def test_a_flood_before_the_answer_closes_the_channel_at_the_limit():
    from agentmill.sandbox.tmux_channel import MAX_REPLY

    flood = b"%output %0 " + b"y" * 1000 + b"\n"

    def answer(nonce, k):
        return flood * (MAX_REPLY // len(flood) + 1024) + _answer(nonce, [([b"late"], True)])

    results, _, channel = _with_peer(answer, piece=1 << 16)
    assert isinstance(results[0], ChannelLostError) and results[0].executed is None
    assert not channel.alive and "MiB" in channel.lost


@sandbox
def test_a_refused_client_never_fails_the_start_by_exec(monkeypatch):
    """Start and stop, again and again, in one sandbox, the control client refused each time: it is
    detached politely (only closing our end left it and a tmux server told to exit waiting on each
    other for seconds, every new client refused: 'server exited unexpectedly'), and an exec start
    that still meets a server on its way out retries."""
    monkeypatch.setattr(tmux_module, "CLIENT_FLAGS", "no-output")

    async def go():
        failures = []
        async with BwrapSandbox(fresh_spec()) as sb:
            for _ in range(30):
                term = TmuxSession(sb, cwd="/app")
                try:
                    await term.start()
                    assert term.transport == "exec"
                except SandboxError as e:
                    failures.append(str(e))
                await term.stop()  # and the next start may meet this server still exiting too
        return failures

    assert run(go()) == []
