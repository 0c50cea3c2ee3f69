"""sandbox/launcher.py: what a process started by the launcher has, read from the process itself."""

from __future__ import annotations

import array
import asyncio
import os
import signal
import socket
import subprocess

import pytest

from agentmill.errors import AgentmillError
from agentmill.sandbox import launcher
from agentmill.sandbox.launcher import LaunchPlan, launch, launcher_wanted
from agentmill.sandbox.uids import lease_uid
from tests.sandbox.helpers import launcher_carrying_privileges, run

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to a sandbox uid needs root")
ENV = {"PATH": "/usr/bin:/bin"}


async def _run(plan: LaunchPlan) -> tuple[int, str, str]:
    proc = await launch(plan, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.gather(proc.stdout.read(), proc.stderr.read())
    return await proc.wait(), out.decode(), err.decode()


def _status_of(text: str) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


SELF = "cat /proc/self/status; echo ---; ls /proc/self/fd; echo ---; cat /proc/self/limits"


def _problems(out: str, uid: int) -> list[str]:
    status, fds, limits = out.split("---\n")
    st = _status_of(status)
    problems = []
    if st["Uid"].split() != [str(uid)] * 4 or st["Gid"].split() != [str(uid)] * 4:
        problems.append(f"uid/gid: {st['Uid']} / {st['Gid']}")
    if st["Groups"].strip():
        problems.append(f"groups: {st['Groups'].strip()}")
    problems += [f"{cap}: {st[cap]}" for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb") if int(st[cap], 16)]
    # ls's own listing holds 0, 1, 2 and the folder it reads (3): anything more came from the launcher
    if sorted(fds.split()) != ["0", "1", "2", "3"]:
        problems.append(f"fds: {fds.split()}")
    nproc = [line.split()[2:4] for line in limits.splitlines() if line.startswith("Max processes")]
    if nproc != [["33", "33"]]:
        problems.append(f"rlimits: nproc {nproc}")
    return problems


@pytest.fixture
def dirty_launcher():
    if os.geteuid() != 0:
        pytest.skip("the launcher carries groups and capabilities to lose only when started by root")
    with launcher_carrying_privileges() as started:
        yield started


def _problems_of_a_launch() -> list[str]:
    """SELF launched as a leased sandbox uid with a pids limit: what is wrong with what it saw."""
    lease = lease_uid()
    try:
        code, out, err = run(
            _run(LaunchPlan(["sh", "-c", SELF], ENV, rlimits={"nproc": 33, "nofile": 64}, uid=lease.uid))
        )
    finally:
        lease.release()
    assert code == 0, err
    return _problems(out, lease.uid)


@as_root
def test_a_launched_process_has_its_uid_no_groups_no_capabilities_no_fds_of_ours(dirty_launcher):
    assert _problems_of_a_launch() == []


@as_root
@pytest.mark.parametrize("step, caught", [("groups", "groups"), ("bounding", "CapBnd"), ("inheritable", "CapInh")])
def test_a_drop_step_left_out_shows(dirty_launcher, monkeypatch, step, caught):
    monkeypatch.setattr(launcher, "DROP_STEPS", [s for s in launcher.DROP_STEPS if s != step])
    problems = _problems_of_a_launch()
    assert any(p.startswith(caught) for p in problems), problems


def test_exit_status_signals_and_a_failed_exec():
    async def go():
        code7 = await _run(LaunchPlan(["sh", "-c", "echo out; echo err >&2; exit 7"], ENV))
        proc = await launch(LaunchPlan(["sleep", "60"], ENV))
        assert proc.returncode is None
        assert os.getsid(proc.pid) == os.getpgid(proc.pid) == proc.pid  # its own session: stop kills its group
        proc.kill()
        killed = await proc.wait()
        proc.kill()  # after its exit: nothing to signal, no error, no stray pid hit
        missing = await _run(LaunchPlan(["/nonexistent/program"], ENV))
        return code7, killed, missing

    code7, killed, missing = run(go())
    assert code7 == (7, "out\n", "err\n")
    assert killed == -signal.SIGKILL
    assert missing[0] == 127 and "agentmill launcher" in missing[2] and "nonexistent" in missing[2]


def test_a_dead_launcher_is_replaced_and_its_processes_report_lost():
    async def go():
        proc = await launch(LaunchPlan(["sleep", "60"], ENV))
        first = launcher._launcher.proc
        first.kill()
        lost = await asyncio.wait_for(proc.wait(), 10)
        os.kill(proc.pid, signal.SIGKILL)  # the sleep outlived it: an orphan now, not ours to wait for
        again = await _run(LaunchPlan(["true"], ENV))
        return first, lost, again

    first, lost, again = run(go())
    assert lost == 255
    assert again[0] == 0 and launcher._launcher.proc is not first


def test_the_setting_is_checked(monkeypatch):
    monkeypatch.setenv(launcher.LAUNCHER_ENV, "0")
    assert launcher_wanted() is False
    monkeypatch.setenv(launcher.LAUNCHER_ENV, "yes")
    with pytest.raises(AgentmillError, match="AGENTMILL_LAUNCHER='yes'"):
        launcher_wanted()


def _running(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in open(f"/proc/{entry}/cmdline", "rb").read():
                found.append(int(entry))
        except OSError:
            pass
    return found


async def _gone(marker: str, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        await asyncio.sleep(0.05)
        if not _running(marker):
            return True
    return False


def test_a_launch_cancelled_midway_leaves_no_process_behind():
    marker = f"61.{os.getpid()}"

    async def go():
        task = asyncio.ensure_future(launch(LaunchPlan(["sleep", marker], ENV)))
        await asyncio.sleep(0)  # the plan is sent; the answer has not come
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await _gone(marker)  # the process comes, and is killed when it does

    assert run(go()), f"the cancelled launch left {_running(marker)}"


def test_a_launch_cancelled_after_its_answer_leaves_no_process_behind(monkeypatch):
    """Cancelled while its pipes are wrapped: the process has started, and nobody else owns it."""
    marker = f"62.{os.getpid()}"
    wrapping = asyncio.Event()

    async def stuck(loop, fd):
        wrapping.set()
        await asyncio.Future()  # until cancelled

    monkeypatch.setattr(launcher, "_stream", stuck)

    async def go():
        task = asyncio.ensure_future(launch(LaunchPlan(["sleep", marker], ENV), stdout=subprocess.PIPE))
        await asyncio.wait_for(wrapping.wait(), 10)
        assert _running(marker), "the process should have started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await _gone(marker)

    assert run(go()), f"the cancelled launch left {_running(marker)}"


def test_a_malformed_request_is_answered_with_an_error_and_the_launcher_goes_on():
    """Fewer fds than a plan needs: the launcher says so on the answer socket and serves the next."""
    control = launcher._current().sock
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        control.setblocking(True)
        control.sendmsg(
            [b'{"argv": ["true"], "env": {}}'],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]))],
        )
        control.setblocking(False)
        theirs.close()
        ours.settimeout(10)
        answer = ours.recv(4096)
    finally:
        ours.close()
    assert b"malformed request" in answer and b"1 fds" in answer, answer
    assert run(_run(LaunchPlan(["true"], ENV)))[0] == 0


def test_launches_wait_while_the_launcher_is_behind_and_all_start_once_it_reads(monkeypatch):
    """A stopped launcher reads nothing: its socket's buffer fills, further sends wait for room
    (never fail), and every launch starts once it reads again."""
    waits = []
    room = launcher._room

    async def counted(loop, sock):
        waits.append(sock)
        await room(loop, sock)

    monkeypatch.setattr(launcher, "_room", counted)
    plan = LaunchPlan(["sh", "-c", 'echo "$N"'], ENV | {"PAD": "x" * 40_000})  # about 5 fill the buffer
    server = launcher._current().proc.pid

    async def main():
        os.kill(server, signal.SIGSTOP)
        try:
            runs = [asyncio.ensure_future(_run(LaunchPlan(plan.argv, plan.env | {"N": str(i)}))) for i in range(16)]
            await asyncio.sleep(0.5)
            pending = sum(not r.done() for r in runs)
        finally:
            os.kill(server, signal.SIGCONT)
        return pending, await asyncio.wait_for(asyncio.gather(*runs), 30)  # a lost wake hangs: fail, not wait

    pending, results = run(main())
    assert pending == 16  # nothing starts while the launcher is stopped
    assert len(waits) >= 2  # the buffer filled and several sends waited for room at once
    assert [(code, out.strip()) for code, out, _ in results] == [(0, str(i)) for i in range(16)]


def test_a_plan_too_large_for_the_socket_gets_one_clear_error_and_the_launcher_goes_on():
    with pytest.raises(AgentmillError, match=r"launch plan of \d+ bytes .* AGENTMILL_LAUNCHER=0"):
        run(_run(LaunchPlan(["true"], ENV | {"PAD": "x" * 400_000})))
    assert run(_run(LaunchPlan(["sh", "-c", "echo fine"], ENV)))[:2] == (0, "fine\n")


def test_launches_waiting_for_room_when_the_launcher_dies_go_to_a_new_one():
    """Killed with its buffer full: the plans it held fail as "gone" (typed), every sender still
    waiting for room starts on a new launcher, and none hangs."""
    plan = LaunchPlan(["sh", "-c", 'echo "$N"'], ENV | {"PAD": "x" * 40_000})
    old = launcher._current().proc

    async def main():
        os.kill(old.pid, signal.SIGSTOP)
        runs = [asyncio.ensure_future(_run(LaunchPlan(plan.argv, plan.env | {"N": str(i)}))) for i in range(16)]
        await asyncio.sleep(0.5)
        os.kill(old.pid, signal.SIGKILL)
        return await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), 30)

    results = run(main())
    started = [i for i, r in enumerate(results) if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert all(isinstance(e, AgentmillError) and "launcher is gone" in str(e) for e in lost), lost
    assert len(started) >= 8, results  # about 5 plans fit in its buffer; the rest were waiting
    assert all(results[i][:2] == (0, f"{i}\n") for i in started)
    assert launcher._current().proc.pid != old.pid


def test_a_wait_for_room_on_a_socket_closed_meanwhile_ends(monkeypatch):
    """A socket closed while senders wait (another thread replaced a dead launcher) leaves the
    loop's poll without ever saying so: the wait looks again rather than hang."""
    monkeypatch.setattr(launcher, "ROOM_RECHECK", 0.2)

    async def main():
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setblocking(False)
        try:
            while True:
                ours.send(b"x" * 4096)
        except BlockingIOError:
            pass
        waiting = asyncio.ensure_future(launcher._room(asyncio.get_running_loop(), ours))
        await asyncio.sleep(0.1)
        assert not waiting.done()  # full: it waits
        ours.close()  # theirs stays open: no hang-up to wake it
        try:
            await asyncio.wait_for(waiting, 5)
        finally:
            theirs.close()

    run(main())
