"""The launcher: a small process that starts sandboxes for agentmill (see launcher.py).

Run as `python -I -S launcher_server.py FD`, standard library only. FD is a SOCK_SEQPACKET socket to
the agentmill process. Each message there asks for one process: a JSON plan with, as SCM_RIGHTS
fds, the socket to answer on and the new process's stdin, stdout and stderr. The launcher forks;
the child joins the plan's cgroups, sets its rlimits, drops to the plan's uid with no groups and no
capabilities, and execs. The answer socket gets {"pid": N} with a pidfd for it, then {"exit": code}
once the launcher has reaped it. The launcher exits when the agentmill process's end is closed.

A fork of this process (a few MiB, one thread) replaces what the event loop's process did per
sandbox: vfork-exec `sh` to join the cgroups, `prlimit`, then `setpriv`, three program starts.
"""

from __future__ import annotations

import array
import ctypes
import json
import os
import resource
import selectors
import signal
import socket
import sys
import warnings  # noqa: F401  os.execvpe imports it: after the drop to a sandbox's uid, our stdlib may be unreadable

_RLIMITS = {
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "fsize": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
    "as": resource.RLIMIT_AS,
}
_PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_MAX_FDS = 4
_MAX_PLAN = 1 << 20  # bytes: a plan is argv and env, a few KiB
_libc = ctypes.CDLL(None, use_errno=True)
# Looked up once here, not in every child: a child's first ctypes lookup costs more than its exec.
_prctl, _capset = _libc.prctl, _libc.capset
with open("/proc/sys/kernel/cap_last_cap") as _f:
    _LAST_CAP = int(_f.read())


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_CAP_HEADER, _NO_CAPS = ctypes.pointer(_CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)), (_CapData * 2)()


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _drop_to(uid: int, steps: list[str]) -> None:
    """The steps setpriv --reuid/--regid --clear-groups --bounding-set=-all --inh-caps=-all took,
    in the order that keeps each possible: the bounding set needs CAP_SETPCAP, so before the uid."""
    if "groups" in steps:
        os.setgroups([])
    if "bounding" in steps:
        for cap in range(_LAST_CAP + 1):
            _check(_prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap} from the bounding set")
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears the permitted, effective and ambient sets, not the inheritable
    if "inheritable" in steps:
        _check(_capset(_CAP_HEADER, _NO_CAPS), "clearing inheritable capabilities")


def _child(plan: dict, fds: list[int], started: int) -> None:
    """In the forked child: never returns. Its stdio first, so that a failure is said there;
    `started` is closed by the exec (or the exit), which tells the launcher the steps are done."""
    try:
        for target, fd in enumerate(fds[1:4]):
            os.dup2(fd, target)
        os.dup2(started, 3, inheritable=False)
        # Nothing else of ours passes on (the control socket, other answers, pidfds); the bound is
        # taken before the rlimits lower it.
        os.closerange(4, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        if plan.get("new_session"):
            os.setsid()
        if plan.get("nice") is not None and plan["nice"] != os.getpriority(os.PRIO_PROCESS, 0):
            try:
                os.setpriority(os.PRIO_PROCESS, 0, plan["nice"])
            except PermissionError:  # below the launcher's own value without the privilege: stays there
                pass
        for procs in plan.get("cgroups", []):
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        for name, value in plan.get("rlimits", {}).items():
            resource.setrlimit(_RLIMITS[name], (value, value))
        if plan.get("uid") is not None:
            _drop_to(plan["uid"], plan.get("drop", []))
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; the program gets the default
            signal.signal(sig, signal.SIG_DFL)  # (subprocess's restore_signals): pasta refuses to start otherwise
        os.execvpe(plan["argv"][0], plan["argv"], plan["env"])
    except BaseException as e:  # noqa: BLE001  said on the new process's stderr, as sh or setpriv would
        os.write(2, f"agentmill launcher: {e}\n".encode("utf-8", "replace"))
    finally:
        os._exit(127)


def _send(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    try:
        sock.sendmsg([json.dumps(message).encode()], ancillary)
    except OSError:  # agentmill gave up on this one; the process is reaped all the same
        pass


def _start(request: bytes, fds: list[int], sel: selectors.BaseSelector) -> None:
    answer = socket.socket(fileno=fds[0])
    try:
        plan = json.loads(request)
        started, told = os.pipe()
        pid = os.fork()
    except (OSError, ValueError) as e:
        _send(answer, {"error": str(e)})
        answer.close()
        for fd in fds[1:]:
            os.close(fd)
        return
    if pid == 0:
        _child(plan, fds, told)
    os.close(told)
    for fd in fds[1:]:
        os.close(fd)
    # Its pid goes out once the child has exec'd (or died trying): by then it has its session,
    # cgroups and uid, as when a vfork returned. Until then its pidfd waits here.
    sel.register(started, selectors.EVENT_READ, ("started", pid, os.pidfd_open(pid), answer))


def _on_started(started: int, pid: int, pidfd: int, answer: socket.socket, sel: selectors.BaseSelector) -> None:
    sel.unregister(started)
    os.close(started)
    _send(answer, {"pid": pid}, (pidfd,))
    sel.register(pidfd, selectors.EVENT_READ, ("exited", pid, answer))


def _reap(pidfd: int, pid: int, answer: socket.socket, sel: selectors.BaseSelector) -> None:
    sel.unregister(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    _send(answer, {"exit": os.waitstatus_to_exitcode(status)})
    answer.close()


def serve(control: socket.socket) -> None:
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ, None)
    fd_space = socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)
    while True:
        for key, _ in sel.select():
            if key.data is not None:
                if key.data[0] == "started":
                    _, pid, pidfd, answer = key.data
                    _on_started(key.fd, pid, pidfd, answer, sel)
                else:
                    _, pid, answer = key.data
                    _reap(key.fd, pid, answer, sel)
                continue
            data, ancillary, flags, _ = control.recvmsg(_MAX_PLAN, fd_space)
            if not data:  # agentmill's end is closed: it has gone
                return
            fds = array.array("i")
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
            if len(fds) == _MAX_FDS and not flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                _start(data, list(fds), sel)
                continue
            if fds:
                _send(
                    socket.socket(fileno=os.dup(fds[0])),
                    {"error": f"a malformed request ({len(data)} bytes, {len(fds)} fds, flags {flags})"},
                )
            for fd in fds:
                os.close(fd)


if __name__ == "__main__":
    os.chdir("/")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two fds per live sandbox
    serve(socket.socket(fileno=int(sys.argv[1])))
