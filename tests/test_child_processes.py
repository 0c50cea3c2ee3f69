"""Children started through child_processes.spawn are reaped by the loop that started them, through
their pidfd: no thread per child (3.11's default starts one, and blocks the loop until it runs),
any number of loops, the exit status right (a code, a signal, a child that exits at once)."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from agentmill.runtime.child_processes import spawn, use_pidfd_watcher


async def _exit_status(*argv: str) -> int:
    proc = await spawn(*argv)
    return await proc.wait()


async def _threads_while_a_child_runs() -> tuple[int, int]:
    before = threading.active_count()
    proc = await spawn("sleep", "0.3")
    during = threading.active_count()
    await proc.wait()
    return before, during


def test_exit_codes_signals_and_instant_exits_are_reported():
    assert asyncio.run(_exit_status("sh", "-c", "exit 3")) == 3
    assert asyncio.run(_exit_status("true")) == 0  # may exit before its pidfd is even opened
    assert asyncio.run(_exit_status("sh", "-c", "kill -9 $$")) == -9


def test_no_thread_is_started_per_child():
    assert use_pidfd_watcher()
    before, during = asyncio.run(_threads_while_a_child_runs())
    assert during == before, "a thread was started to wait for the child"


def test_loops_in_other_threads_and_later_runs_reap_their_own_children():
    results: list[int] = []

    def in_a_thread():
        results.append(asyncio.run(_exit_status("sh", "-c", "exit 5")))

    threads = [threading.Thread(target=in_a_thread) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [5, 5, 5]
    assert asyncio.run(_exit_status("sh", "-c", "exit 7")) == 7  # a fresh loop after those


async def _many_at_once(n: int) -> list[int]:
    procs = [await spawn("sh", "-c", f"exit {i % 7}") for i in range(n)]
    return [await p.wait() for p in procs]


def test_many_children_at_once_each_get_their_own_status():
    assert asyncio.run(_many_at_once(64)) == [i % 7 for i in range(64)]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 watches children by pidfd itself")
def test_a_watcher_someone_else_chose_is_left_alone(monkeypatch):
    import warnings

    import agentmill.runtime.child_processes as cp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        policy = asyncio.get_event_loop_policy()
        previous = policy.get_child_watcher()
        monkeypatch.setattr(cp, "_checked", False)

        class Theirs(asyncio.ThreadedChildWatcher):
            pass

        chosen = Theirs()
        policy.set_child_watcher(chosen)
        try:
            assert not cp.use_pidfd_watcher()
            assert policy.get_child_watcher() is chosen
        finally:
            policy.set_child_watcher(previous)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 watches children by pidfd itself")
def test_spawn_alone_installs_the_pidfd_watcher_in_a_fresh_process():
    import subprocess

    code = (
        "import asyncio, warnings; from agentmill.runtime.child_processes import spawn\n"
        "async def main():\n    p = await spawn('true'); return await p.wait()\n"
        "rc = asyncio.run(main())\n"
        "warnings.simplefilter('ignore')\n"
        "print(rc, type(asyncio.get_event_loop_policy().get_child_watcher()).__name__)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["0", "LoopPidfdWatcher"], r.stderr
