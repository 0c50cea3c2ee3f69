"""Child processes started from an event loop, reaped by the loop itself.

Python 3.11's asyncio waits for each child in a thread of its own (ThreadedChildWatcher): a thread
started per process, and `Thread.start` blocks the event loop until the new thread has run, which
on a machine busy with hundreds of sandboxes is milliseconds each time (benchmarks/inflight.py
found the loop stalled there). Where the kernel gives pidfds (Linux 5.3+), the loop watches the
child's pidfd like any other file descriptor instead: what Python 3.12 does by default.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import warnings

from agentmill.runtime.loop_priority import BASE_NICE_ENV, base_nice, steps_to_base

_checked = False


class LoopPidfdWatcher(asyncio.AbstractChildWatcher):
    """Each child watched through its pidfd by the loop that started it. Python 3.11's own
    PidfdChildWatcher serves the one loop it was attached to; agentmill runs several (one per
    `asyncio.run`, one per trainer thread), so this one asks for the running loop each time, as
    3.12's does."""

    def add_child_handler(self, pid, callback, *args):
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)  # readable once the child has exited, even if it already has
        loop._add_reader(pidfd, self._reap, loop, pid, pidfd, callback, args)

    @staticmethod
    def _reap(loop, pid, pidfd, callback, args) -> None:
        loop._remove_reader(pidfd)
        try:
            _, status = os.waitpid(pid, 0)
            returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # reaped elsewhere: its status is lost (asyncio says 255 too)
            returncode = 255
        finally:
            os.close(pidfd)
        callback(pid, returncode, *args)

    def remove_child_handler(self, pid):
        return False

    def attach_loop(self, loop):
        pass

    def is_active(self):
        return True

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def use_pidfd_watcher() -> bool:
    """Replace 3.11's default threaded child watcher with LoopPidfdWatcher, once per process; a
    watcher someone else chose is left alone. True when children are watched by pidfd."""
    global _checked
    if sys.version_info >= (3, 12):
        return True  # the pidfd watcher is already the default where the kernel has it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        policy = asyncio.get_event_loop_policy()
        if not _checked:
            _checked = True
            if type(policy.get_child_watcher()) is asyncio.ThreadedChildWatcher and _pidfd_works():
                policy.set_child_watcher(LoopPidfdWatcher())
        return isinstance(policy.get_child_watcher(), LoopPidfdWatcher)


def _pidfd_works() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):  # an old kernel, or a seccomp filter that refuses it
        return False
    return True


async def spawn(*argv: str, keep_raise: bool = False, **kwargs) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec`, with the child reaped through its pidfd where possible,
    and started as a normal process at the base nice value, not at the priority of a loop that goes
    first (loop_priority.steps_to_base: a thread's nice value passes to its children).
    keep_raise: a worker, whose loop carries the turns, keeps a "nice" raise and is told the base
    so that its own children go back there."""
    if not _checked:  # once per process: every sandbox start comes through here
        use_pidfd_watcher()
    argv = at_base(argv, keep_raise)
    base = base_nice()
    if keep_raise and base is not None:
        env = kwargs.get("env")
        kwargs["env"] = {**(os.environ if env is None else env), BASE_NICE_ENV: str(base)}
    return await asyncio.create_subprocess_exec(*argv, **kwargs)


def at_base(argv: tuple[str, ...], keep_raise: bool = False) -> tuple[str, ...]:
    """argv behind `nice -n K` when a child of this thread would not start at the base (see spawn)."""
    steps = steps_to_base(keep_raise)
    if steps:
        return (_NICE, "-n", str(steps), *argv)  # execs in place (same pid); about 0.8 ms of CPU
    return tuple(argv)


_NICE = shutil.which("nice") or "/usr/bin/nice"  # found once, on the host's PATH: a child's env may be bare
