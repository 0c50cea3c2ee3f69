"""One command as a sandbox's whole life (sandbox/command.py): what the command sees, what comes
back, timeouts, start failures, the linger for leftovers, and the supervisor's marks, each planted
from inside the sandbox as a hostile test run would."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from agentmill.errors import SandboxError, SandboxStartError
from agentmill.sandbox.command import OneCommandSandbox, run_command
from agentmill.sandbox.conformance import _host_processes_with, fresh_spec
from tests.conftest import sandbox

pytestmark = sandbox


def _run(coro):
    return asyncio.run(coro)


def test_output_env_and_exit_status_come_back():
    spec = fresh_spec(env={"SPEC_VAR": "from-spec"})
    r = _run(
        run_command(
            spec,
            ["/bin/sh", "-c", 'echo "$SPEC_VAR $CALL_VAR $(pwd)"; echo err >&2; exit 3'],
            env={"CALL_VAR": "from-call"},
        )
    )
    assert (r.returncode, r.stdout, r.stderr, r.timed_out, r.marks) == (
        3,
        "from-spec from-call /app\n",
        "err\n",
        False,
        "sxe",
    )
    r = _run(run_command(fresh_spec(), ["printf", "%s|", "a b", "$HOME"], cwd="/tmp"))
    assert r.stdout == "a b|$HOME|"


def test_output_is_capped_without_blocking_the_command():
    r = _run(
        run_command(
            fresh_spec(),
            ["/bin/sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x; echo done >&2"],
            max_output=1000,
            timeout=30,
        )
    )
    assert r.returncode == 0 and not r.timed_out
    assert r.stdout == "x" * 1000 and r.stderr == "done\n"


def test_the_command_never_holds_the_marks_pipe():
    """Its stdin is /dev/null, and no descriptor of it is the supervisor's pipe."""
    r = _run(
        run_command(
            fresh_spec(), ["/bin/sh", "-c", "readlink /proc/self/fd/0; ls -l /proc/self/fd | grep -c pipe: || true"]
        )
    )
    lines = r.stdout.split()
    assert lines[0] == "/dev/null"
    assert lines[1] == "2"  # stdout and stderr, nothing else


def test_a_timeout_kills_the_sandbox_and_everything_in_it():
    marker = f"am-cmd-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    r = _run(
        run_command(
            fresh_spec(), ["/bin/bash", "-c", f"(exec -a {marker} sleep 300) & exec -a {marker} sleep 300"], timeout=0.5
        )
    )
    assert r.timed_out and r.returncode == -9
    assert time.monotonic() - started < 5
    assert _host_processes_with(marker) == []


def test_a_sandbox_that_cannot_start_is_a_start_error_not_the_commands_exit():
    spec = fresh_spec()
    spec.ro_mounts["/data"] = spec.rootfs.parent / "missing"
    with pytest.raises(SandboxStartError, match="sandbox failed to start"):
        _run(run_command(spec, ["true"]))


def test_a_sandbox_that_never_comes_up_is_given_up(monkeypatch):
    """No start mark within the start timeout: a start error, and nothing is left running."""
    from agentmill.sandbox import command

    marker = f"am-slow-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(command, "START_TIMEOUT", 0.5)
    monkeypatch.setattr(command, "_SUPERVISE", f"/usr/bin/bash -c 'exec -a {marker} sleep 30'\n" + command._SUPERVISE)
    started = time.monotonic()
    with pytest.raises(SandboxStartError, match="did not start within"):
        _run(run_command(fresh_spec(), ["true"]))
    assert time.monotonic() - started < 5 and _host_processes_with(marker) == []


def test_leftovers_get_the_linger_and_at_exit_comes_first():
    """at_exit runs once the command has exited and while its leftover still runs; the leftover
    dies with the supervisor after the linger. Without leftovers there is no wait."""
    spec = fresh_spec()
    out = spec.rootfs.parent / "shared"
    out.mkdir()
    spec.rw_mounts["/shared"] = out
    seen = {}

    async def at_exit():
        seen["at_exit"] = (out / "late").exists()

    command = "(sleep 0.3; echo late > /shared/late; sleep 300) >/dev/null 2>&1 & echo started"
    started = time.monotonic()
    r = _run(run_command(spec, ["/bin/sh", "-c", command], linger=1.0, at_exit=at_exit))
    took = time.monotonic() - started
    assert r.stdout == "started\n" and r.marks == "sxe"
    assert seen == {"at_exit": False} and (out / "late").read_text() == "late\n"
    assert 0.9 < took < 5

    started = time.monotonic()
    r = _run(run_command(fresh_spec(), ["true"], linger=5.0))
    assert r.marks == "sxe" and time.monotonic() - started < 2.5


@pytest.mark.parametrize(
    "planted, marks",
    [
        ("kill -9 2", "s"),  # the supervisor killed before the command ends
        ("(sleep 0.2; kill -9 2) >/dev/null 2>&1 &", "sx"),  # ... by a leftover, while it lingers
    ],
)
def test_killing_the_supervisor_shows_in_its_marks(planted, marks):
    r = _run(run_command(fresh_spec(), ["/bin/sh", "-c", planted], linger=2.0))
    assert r.marks == marks, r


def test_a_forged_mark_is_refused_or_seen():
    """The supervisor's shell keeps the marks pipe on a descriptor of its own while the command runs;
    the command writes a mark into every pipe it can reopen there. The host made the pipe: when it
    runs as root the sandbox cannot reopen it at all; otherwise the extra mark shows."""
    forge = "for f in /proc/2/fd/*; do case $(readlink $f) in pipe:*) printf x > $f && echo forged;; esac; done"
    r = _run(run_command(fresh_spec(), ["/bin/sh", "-c", forge]))
    if "forged" in r.stdout:
        assert r.marks != "sxe", r
    else:
        assert r.marks == "sxe" and "Permission denied" in r.stderr, r


def test_the_one_command_sandbox_runs_exactly_one_command():
    async def go():
        sb = OneCommandSandbox(fresh_spec())
        await sb.start()
        first = await sb.exec("echo one")
        with pytest.raises(SandboxError, match="one command"):
            await sb.exec("echo two")
        await sb.stop()
        return first

    r = _run(go())
    assert r.stdout == "one\n" and r.returncode == 0


def test_a_one_command_sandbox_is_as_isolated_as_a_started_one():
    """The command runs in bwrap's namespaces like any sandbox: no network but loopback, a read-only
    /usr, a pid namespace of its own (bwrap's init, the supervisor, the command), not as host root."""
    probe = (
        "awk 'NR > 2 {printf \"%s \", $1}' /proc/net/dev; echo; touch /usr/planted 2>/dev/null && echo wrote-usr || echo usr-ro; "
        "set -- /proc/[0-9]*; echo pids=$#; awk '/^Uid/ {print \"uid=\" $2}' /proc/self/status"
    )
    r = _run(run_command(fresh_spec(), ["/bin/sh", "-c", probe]))
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["lo:"], r
    assert lines[1:] == ["usr-ro", "pids=3", "uid=0"], r  # root inside, mapped to an unprivileged uid outside
    assert not __import__("pathlib").Path("/usr/planted").exists()


def test_a_backend_without_the_one_command_mode_runs_it_through_its_guest():
    """run_command's fallback: any registered backend works, with the same result and at_exit."""
    from agentmill.sandbox.bwrap import BwrapSandbox
    from agentmill.sandbox.protocol import Capability
    from agentmill.sandbox.registry import sandbox_backend, unregister_backend

    class GuestOnly:  # a backend that only starts guest-served sandboxes
        capabilities = frozenset({Capability.CONTROL_DIR, Capability.GUEST_SOCKET})

        def __init__(self, spec, *, name=None):
            self._inner = BwrapSandbox(spec, name=name)

        def __getattr__(self, attr):
            if attr == "start_command":
                raise AttributeError(attr)
            return getattr(self._inner, attr)

        async def __aenter__(self):
            await self._inner.start()
            return self

        async def __aexit__(self, *exc):
            await self._inner.stop()

    sandbox_backend("guest-only-test")(GuestOnly)
    calls = []

    async def at_exit():
        calls.append("at_exit")

    try:
        r = _run(
            run_command(
                fresh_spec(), ["/bin/sh", "-c", "echo via-guest; exit 4"], backend="guest-only-test", at_exit=at_exit
            )
        )
    finally:
        unregister_backend("guest-only-test")
    assert (r.returncode, r.stdout, r.marks, calls) == (4, "via-guest\n", "sxe", ["at_exit"])
