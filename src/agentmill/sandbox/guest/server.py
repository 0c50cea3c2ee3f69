"""The in-sandbox exec server. Runs as the sandbox's first process with the guest's own python3
(stdlib only) and serves one JSON request per connection on a unix socket that the host reaches
through a bind-mounted directory. Keeping one long-lived process per sandbox means every exec
shares the same namespaces: loopback, background processes and tmux sessions persist between
commands, exactly as in a container.

Start-up is on every sandbox's critical path, and the usual modules cost more than Python itself
(json and base64 compile regular expressions, socket builds enums, subprocess and threading pull in
a dozen more: 27 ms of CPU against 9 ms for the bare interpreter). So this file imports only C
cores (`_socket`, `_thread`, `_json`, `binascii`, `_signal`) and spawns with os.posix_spawn as
subprocess.Popen(..., start_new_session=True) would. tests/sandbox/test_guest_startup.py holds the
import list to that.
"""

import binascii
import os
import sys
import time

import _signal
import _socket
import _thread

try:
    import _json  # the C scanner json itself uses; json's module adds only regex-based fallbacks
except ImportError:  # a Python built without it: the json module, imported when first needed
    _json = None  # type: ignore[assignment]  # an optional module; the guest imports no typing

MAX_OUTPUT = 16 << 20  # per stream; the host asks for less when it wants
_ENOENT, _ENOTDIR = 2, 20  # exec failures that only mean "try the next PATH entry"


# -- JSON: requests decoded by json's own C scanner, flat replies encoded like json.dumps --------

class _Decoding:
    """What json.JSONDecoder hands its C scanner, with json.loads' defaults."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


# typeshed types the scanner's context as the scanner class; json.JSONDecoder passes a decoder like this
_scan = _json.make_scanner(_Decoding()) if _json is not None else None  # type: ignore[arg-type]


def _loads(data):
    """json.loads(data): the fast path takes what the host sends (UTF-8, an object, one line);
    anything else, and every error, goes to json.loads itself, so results and messages match it."""
    if _scan is not None and data[:2] == b'{"':
        try:
            text = data.decode("utf-8", "surrogatepass")
            obj, end = _scan(text, 0)
            if not text[end:].strip(" \t\n\r"):
                return obj
        except Exception:
            pass
    import json
    return json.loads(data)


def _dumps(reply):
    """json.dumps(reply), byte for byte, for a flat dict of str, int, float, bool and None."""
    if _json is None:
        import json
        return json.dumps(reply)
    parts = []
    for key, value in reply.items():
        if value is None:
            text = "null"
        elif value is True or value is False:
            text = "true" if value else "false"
        elif type(value) is str:
            text = _json.encode_basestring_ascii(value)
        elif type(value) is int:
            text = int.__repr__(value)
        elif type(value) is float and value == value and value not in (float("inf"), float("-inf")):
            text = float.__repr__(value)
        else:
            import json
            return json.dumps(reply)
        parts.append(_json.encode_basestring_ascii(key) + ": " + text)
    return "{" + ", ".join(parts) + "}"


def _b64encode(data):
    return binascii.b2a_base64(data, newline=False).decode()


def _b64decode(text):
    if type(text) is str or type(text) is bytes:  # what base64.b64decode does for these, minus the import
        return binascii.a2b_base64(text)
    import base64
    return base64.b64decode(text)


# -- processes: subprocess.Popen(..., start_new_session=True) without importing subprocess -------

def _check_args(argv, cwd, env):
    """The ValueErrors Popen raises before it forks (the child must fail only in system calls)."""
    for arg in [*argv, cwd or ""]:
        if b"\0" in os.fsencode(arg):
            raise ValueError("embedded null byte")
    for key, value in env.items():
        key, value = os.fsencode(key), os.fsencode(value)
        if b"=" in key:
            raise ValueError("illegal environment variable name")
        if b"\0" in key or b"\0" in value:
            raise ValueError("embedded null byte")


def _spawn(argv, cwd, env, fds):
    """Start argv with fds as its stdin, stdout and stderr, in a new session, with SIGPIPE and
    SIGXFSZ back to default and no other descriptor; returns its pid. As with Popen, a failed
    chdir or exec raises OSError here (its errno, strerror and the cwd or argv[0] as filename)."""
    executable = argv[0]
    if os.path.dirname(executable):
        candidates = [executable]
    else:
        search = env.get("PATH")  # os.get_exec_path(env) for a str-keyed env, minus its warnings import
        candidates = [os.path.join(d, executable) for d in (os.defpath if search is None else search).split(os.pathsep)]
    _check_args(argv, cwd, env)
    global _use_posix_spawn
    if _use_posix_spawn:
        try:
            return _posix_spawn(argv, candidates, cwd, env, fds)
        except NotImplementedError:  # a libc without POSIX_SPAWN_SETSID
            _use_posix_spawn = False
    return _fork_exec(argv, candidates, cwd, env, fds)


# posix_spawn is vfork + exec in libc: ~0.1 ms, where fork copies the server's page tables and
# faults its pages back (~1 ms per exec). It has no chdir, so the server itself steps into cwd
# under _cwd_lock and back (ops that resolve a relative path take the lock too).
_use_posix_spawn = hasattr(os, "posix_spawn")
_cwd_lock = _thread.allocate_lock()
_home = None  # the server's own working directory, opened in main()


def _posix_spawn(argv, candidates, cwd, env, fds):
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)]
    first = last = 0
    with _cwd_lock:
        if cwd:
            os.chdir(cwd)  # its OSError names cwd, as Popen's does
        try:
            for path in candidates:  # the first error that is not "absent here", else the last one
                try:
                    return os.posix_spawn(path, argv, env, file_actions=actions, setsid=True,
                                          setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
                except OSError as e:
                    last = e.errno
                    if not first and e.errno not in (_ENOENT, _ENOTDIR):
                        first = e.errno
        finally:
            if cwd:
                os.fchdir(_home)
    errno = first or last
    raise OSError(errno, os.strerror(errno), argv[0])


def _fork_exec(argv, candidates, cwd, env, fds):
    """For a Python without os.posix_spawn (before 3.8, so no fork-with-threads warning either):
    fork, then only system calls until exec."""
    err_r, err_w = os.pipe()  # close-on-exec: EOF on a successful exec
    try:
        pid = os.fork()
        if pid == 0:
            _child(argv, candidates, cwd, env, fds, err_w)  # never returns
    except BaseException:  # no fork (EAGAIN at the pids limit): Popen's OSError, no descriptor kept
        os.close(err_r)
        raise
    finally:
        os.close(err_w)
    try:
        report = b""
        while True:
            chunk = os.read(err_r, 64)
            if not chunk:
                break
            report += chunk
    finally:
        os.close(err_r)
    if not report:
        return pid
    os.waitpid(pid, 0)
    where, _, number = report.decode().partition(":")
    errno = int(number)
    raise OSError(errno, os.strerror(errno), cwd if where == "cwd" else argv[0])


def _child(argv, candidates, cwd, env, fds, err_w):
    """In the forked child: only system calls, then exec. The failing step's errno goes to err_w."""
    step = "exec"
    try:
        for target, fd in enumerate(fds):  # fds are all >= 3 (main() keeps 0-2 open)
            os.dup2(fd, target)
        if cwd:
            step = "cwd"
            os.chdir(cwd)
            step = "exec"
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)  # Python ignores these; its children must not
        _signal.signal(_signal.SIGXFSZ, _signal.SIG_DFL)
        os.setsid()
        os.closerange(3, err_w)
        os.closerange(err_w + 1, max(os.sysconf("SC_OPEN_MAX"), err_w + 1))
        first = last = 0
        for path in candidates:  # the first error that is not "absent here", else the last one
            try:
                os.execve(path, argv, env)
            except OSError as e:
                last = e.errno
                if not first and e.errno not in (_ENOENT, _ENOTDIR):
                    first = e.errno
        os.write(err_w, ("%s:%d" % (step, first or last)).encode())
    except OSError as e:
        os.write(err_w, ("%s:%d" % (step, e.errno or 0)).encode())
    finally:
        os._exit(255)


def _exit_code(status):
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _waiter(pid, status, exited):
    status.append(_exit_code(os.waitpid(pid, 0)[1]))
    exited.release()


def _has_exited(pid):
    """Whether pid has exited, reaped or not (the waiter may not have run yet): as Popen.wait's
    last check before its timeout."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _reader(fd, buf, limit, done):
    kept = 0
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            if kept < limit:  # keep reading past the limit so the writer never blocks
                buf.append(chunk)
                kept += len(chunk)
    finally:
        os.close(fd)
        done.release()


def _started_lock():
    lock = _thread.allocate_lock()
    lock.acquire()
    return lock


def _exec(req):
    limit = min(int(req.get("max_output", MAX_OUTPUT)), MAX_OUTPUT)
    env = req.get("env") or dict(os.environ)
    argv = req["argv"]
    stdin = _b64decode(req["stdin"]) if req.get("stdin") is not None else None
    started = time.monotonic()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe() if stdin is not None else (os.open(os.devnull, os.O_RDWR), None)
    try:
        pid = _spawn(argv, req.get("cwd") or None, env, (in_r, out_w, err_w))
    except BaseException as e:
        for fd in (out_r, err_r, in_w):
            if fd is not None:
                os.close(fd)
        if not isinstance(e, OSError):
            raise
        return {"returncode": 127, "stdout": "", "stderr": _b64encode(f"{argv[0]}: {e.strerror}\n".encode()),
                "timed_out": False, "duration": 0.0}
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    status, exited = [], _started_lock()
    _thread.start_new_thread(_waiter, (pid, status, exited))
    out, err = [], []
    done = [_started_lock(), _started_lock()]
    _thread.start_new_thread(_reader, (out_r, out, limit, done[0]))
    _thread.start_new_thread(_reader, (err_r, err, limit, done[1]))
    if stdin is not None:
        try:
            view = memoryview(stdin)
            while view:
                view = view[os.write(in_w, view):]
        except OSError:
            pass
        finally:
            os.close(in_w)
    timeout = req.get("timeout")
    timed_out = False
    if timeout is None:
        exited.acquire()
    elif not exited.acquire(True, min(max(timeout, 0), _thread.TIMEOUT_MAX)) and not _has_exited(pid):
        timed_out = True
        try:
            os.killpg(pid, _signal.SIGKILL)
        except ProcessLookupError:
            pass
        exited.acquire()
    # A background child may hold the pipes open forever: take what is there, do not wait for EOF.
    deadline = time.monotonic() + 0.2
    for lock in done:
        lock.acquire(True, max(0.0, deadline - time.monotonic()))
    return {
        "returncode": status[0],
        "stdout": _b64encode(b"".join(out)[:limit]),
        "stderr": _b64encode(b"".join(err)[:limit]),
        "timed_out": timed_out,
        "duration": time.monotonic() - started,
    }


def _read(req):
    with _relative_to_home(req["path"]):
        with open(req["path"], "rb") as f:
            data = f.read(int(req.get("max_bytes", MAX_OUTPUT)))
    return {"data": _b64encode(data)}


def _write(req):
    path = req["path"]
    with _relative_to_home(path):
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, int(req.get("mode", 0o644)))
        with os.fdopen(fd, "wb") as f:
            f.write(_b64decode(req["data"]))
        os.chmod(path, int(req.get("mode", 0o644)))
    return {}


class _relative_to_home:
    """Hold _cwd_lock while a relative path is used, so it resolves from the server's directory,
    never from a cwd that a concurrent spawn has stepped into."""

    def __init__(self, path):
        self.lock = _cwd_lock if type(path) is str and not path.startswith("/") else None

    def __enter__(self):
        if self.lock is not None:
            self.lock.acquire()

    def __exit__(self, *exc):
        if self.lock is not None:
            self.lock.release()


def _attach(conn, req):
    """Hand this connection to a long-lived process as its stdin and stdout (the tmux control
    client of sandbox/tmux_channel.py): from then on the host talks to it directly, with no relay in
    between. Nothing is written on success: the process's own output is the answer."""
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        pid = _spawn(req["argv"], req.get("cwd") or None, req.get("env") or dict(os.environ),
                     (conn.fileno(), conn.fileno(), devnull))
    finally:
        os.close(devnull)
    _thread.start_new_thread(os.waitpid, (pid, 0))  # reaped when it exits


OPS = {"exec": _exec, "read": _read, "write": _write, "ping": lambda req: {"pid": os.getpid()}}


def _serve(conn):
    try:
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(1 << 20)
            if not chunk:
                return
            data += chunk
        try:
            req = _loads(data)
            if req["op"] == "attach":  # the connection now belongs to the process (our copy closes here)
                return _attach(conn, req)
            reply = {"ok": True, **OPS[req["op"]](req)}
        except Exception as e:  # the host gets every failure as data, the server lives on
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "kind": _error_kind(e)}
        conn.sendall(_dumps(reply).encode() + b"\n")
    finally:
        conn.close()


def _error_kind(e):
    """The failure's kind as the host's protocol names it (sandbox/bwrap.py), never read from its text."""
    if isinstance(e, FileNotFoundError):
        return "not_found"
    if isinstance(e, (KeyError, TypeError, ValueError)):
        return "bad_request"
    return "os_error" if isinstance(e, OSError) else "error"


def main(path):
    global _home, _use_posix_spawn
    for fd in (0, 1, 2):  # spawned children get 0-2 by dup2 from descriptors above them
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)
    try:
        for name in os.listdir("/proc/self/fd"):  # posix_spawn closes only close-on-exec descriptors
            if int(name) > 2:
                try:
                    os.set_inheritable(int(name), False)
                except OSError:
                    pass  # listdir's own, closed since
        _home = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)  # no read right needed
    except OSError:  # no /proc, or a working directory we cannot open: fork, which closes all itself
        _use_posix_spawn = False
    srv = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    tmp = path + ".tmp"
    srv.bind(tmp)
    srv.listen(64)
    os.rename(tmp, path)  # the host waits for this name: it appears only once we accept
    while True:
        fd, _ = srv._accept()
        _thread.start_new_thread(_serve, (_socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd),))


if __name__ == "__main__":
    main(sys.argv[1])
