"""The loop that runs trials goes first, for as long as trials run on it.

With hundreds of trials in flight on a few cores, one thread, the event loop's, carries every
trial's turns: when it waits for a core, every trial waits. A stall sampler found the late loop
thread inside its own system calls (socket writes, fork/exec, a SQLite insert), runnable but
without a core. So, while at least one trial runs on a loop (`trials_first`, on run_rollout and
run_trial), its thread is put ahead, by the first of these the process may do:

- "rt": the real-time round-robin policy at its lowest priority (SCHED_RR 1). The thread takes a
  core as soon as it wakes and gives it back as soon as it waits, which a loop does all the time.
  Only where the kernel throttles real time (kernel.sched_rt_runtime_us >= 0; 95% of each second
  by default), so a runaway loop can never hold a core. SCHED_RESET_ON_FORK: every process and
  thread it starts is a normal one again (at nice 0: spawn() puts children back at the thread's own
  value where that is not 0).
- "nice": LOOP_THREAD_RAISE nice steps higher (root without real-time runtime, as in most
  containers). A child inherits its thread's nice value, so spawn() (child_processes.py) starts
  each back at the base.
- neither: as it was.

Its file threads (asyncio.to_thread: copies, writes, a sandbox's clean-up) run at FILE_THREAD_NICE, and a
finished trial's removal of its scratch folder runs on threads of its own at REMOVAL_THREAD_NICE
(`removal_threads`): it no longer queues ahead of, or competes with, the file work of trials still
running (256 x 30 replies, with the first turn asked ahead: wall 65.4-65.5 s against 66.0-66.4 s,
docs/benchmarks.md). When the
last trial on the thread ends, the thread gets its policy and nice value back: a trainer's thread
that scores a batch of episodes (rl/reward.py) goes on training at its own priority.

Measured (benchmarks/inflight.py, 256 x 5 replies on 2 cores, paired rounds; docs/benchmarks.md):
loop lag p99 49-75 ms with none of this, 30-66 ms with the file threads lowered, 24-49 ms with the
"nice" raise too, 21-29 ms with "rt" (38-45 ms "nice" in the same rounds).

AGENTMILL_LOOP_PRIORITY chooses: "rt" (the default; "nice" where real time is refused), "nice", "off".
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentmill.errors import AgentmillError

LOOP_THREAD_RAISE = 5
LOOP_RT_PRIORITY = 1
FILE_THREAD_NICE = 10
REMOVAL_THREAD_NICE = 19
CHOICE_ENV = "AGENTMILL_LOOP_PRIORITY"
CHOICES = ("rt", "nice", "off")
# A worker of the processes executor keeps the driver's "nice" raise (its loop carries the turns:
# paired, 2 workers, the workers' loop lag p99 28-47 ms so, 51-67 ms from the base) and is told
# the base here, so that its own children go back to it.
BASE_NICE_ENV = "AGENTMILL_BASE_NICE"
RT_RUNTIME = Path("/proc/sys/kernel/sched_rt_runtime_us")  # -1: real time unthrottled

_arranged: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_here = threading.local()  # .depth (trials running on this thread), .mode, .undo, .base


def trials_first(fn):
    """Decorate a coroutine function that runs trials: its loop goes first while it runs."""

    @functools.wraps(fn)
    async def first(*args, **kwargs):
        with loop_first():
            return await fn(*args, **kwargs)

    return first


@contextlib.contextmanager
def loop_first():
    """The running loop's thread ahead of everything else while the block runs (nested blocks:
    the outermost decides), and its file threads lowered (once per loop, for good)."""
    loop = asyncio.get_running_loop()
    if loop not in _arranged:
        _arranged.add(loop)
        _lower_file_threads(loop)
    depth = getattr(_here, "depth", 0)
    if depth == 0:
        _put_first()
    _here.depth = depth + 1
    try:
        yield
    finally:
        _here.depth -= 1
        if _here.depth == 0:
            _put_back()


def mode_here() -> str | None:
    """How the calling thread is put first now: "rt", "nice", or None (not at all)."""
    return getattr(_here, "mode", None) if getattr(_here, "depth", 0) else None


def base_nice() -> int | None:
    """While the calling thread is raised by "nice": where it (or, in a worker, the driver's
    thread) was before, the value its children must start at. None otherwise."""
    return _here.base if mode_here() == "nice" else None


def steps_to_base(keep_raise: bool = False) -> int:
    """The nice steps a child of the calling thread must take to start at the base (0: none).
    "nice": back down from the raise (none with keep_raise). "rt": reset-on-fork starts the
    children of a real-time thread at nice 0, whatever the thread's own value, so from 0 to it
    (`nice -n 10 agentmill` keeps its sandboxes at 10)."""
    mode = mode_here()
    if mode == "nice" and keep_raise:
        return 0
    start = 0 if mode == "rt" else os.getpriority(os.PRIO_PROCESS, threading.get_native_id())  # where it would begin
    return children_nice() - start


def children_nice() -> int:
    """The nice value a child of the calling thread must start at: the thread's base while it is
    put first, else its own value (the launcher, sandbox/launcher.py, sets it in each child)."""
    if mode_here() in ("rt", "nice"):
        return _here.base
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _put_first() -> None:
    _here.mode = None
    choice = os.environ.get(CHOICE_ENV, "rt")
    if choice not in CHOICES:
        raise AgentmillError(f"{CHOICE_ENV}={choice!r}: expected one of {', '.join(CHOICES)}")
    tid = threading.get_native_id()
    if choice == "rt" and _real_time_is_throttled():
        with contextlib.suppress(OSError, AttributeError):  # refused: no privilege or no runtime in the cgroup
            undo = os.sched_getscheduler(tid), os.sched_getparam(tid)
            os.sched_setscheduler(tid, os.SCHED_RR | os.SCHED_RESET_ON_FORK, os.sched_param(LOOP_RT_PRIORITY))
            _here.mode, _here.undo, _here.base = "rt", undo, os.getpriority(os.PRIO_PROCESS, tid)
            return
    if choice != "off":
        with contextlib.suppress(OSError, AttributeError):  # without CAP_SYS_NICE it stays as it is
            was = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, was - LOOP_THREAD_RAISE)
            _here.mode, _here.undo, _here.base = "nice", was, _inherited_base(was)


def _put_back() -> None:
    tid = threading.get_native_id()
    with contextlib.suppress(OSError, AttributeError):
        if _here.mode == "rt":
            policy, param = _here.undo
            os.sched_setscheduler(tid, policy, param)
        elif _here.mode == "nice":
            os.setpriority(os.PRIO_PROCESS, tid, _here.undo)  # lowering back: always allowed
    _here.mode = None


@functools.cache
def _real_time_is_throttled(runtime: Path = RT_RUNTIME) -> bool:
    try:
        return int(runtime.read_text()) >= 0
    except (OSError, ValueError):  # unreadable: do not assume a throttle
        return False


def _inherited_base(was: int) -> int:
    """A worker started with the driver's raise is told where the driver began; else where we were."""
    told = os.environ.get(BASE_NICE_ENV, "")
    return int(told) if told.lstrip("-").isdigit() and int(told) >= was else was


def _lower_file_threads(loop: asyncio.AbstractEventLoop) -> None:
    """A default executor whose threads run at FILE_THREAD_NICE. asyncio's own (made on a first
    to_thread) is replaced, one someone chose is kept."""
    current = getattr(loop, "_default_executor", None)
    if current is not None and not getattr(current, "_thread_name_prefix", "").startswith("asyncio"):
        return
    loop.set_default_executor(
        ThreadPoolExecutor(
            min(32, (os.cpu_count() or 1) + 4), thread_name_prefix="agentmill-files", initializer=_lower_this_thread
        )
    )
    if current is not None:
        current.shutdown(wait=False)  # what it runs now still finishes


_removal_threads: dict[int, ThreadPoolExecutor] = {}  # per process: a forked child has none of its parent's threads


def removal_threads() -> ThreadPoolExecutor:
    """The executor for removing what finished trials leave behind: nothing running waits on it."""
    pid = os.getpid()
    if pid not in _removal_threads:
        _removal_threads[pid] = ThreadPoolExecutor(
            2,
            thread_name_prefix="agentmill-removals",
            initializer=functools.partial(_lower_this_thread, REMOVAL_THREAD_NICE),
        )
    return _removal_threads[pid]


def _lower_this_thread(nice: int = FILE_THREAD_NICE) -> None:
    with contextlib.suppress(OSError, AttributeError):  # lowering one's own priority is always allowed on Linux
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
