"""The in-sandbox exec server. Runs as the sandbox's first process with the guest's own python3
(stdlib only) and serves one JSON request per connection on a unix socket that the host reaches
through a bind-mounted directory. Keeping one long-lived process per sandbox means every exec
shares the same namespaces: loopback, background processes and tmux sessions persist between
commands, exactly as in a container.
"""

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

MAX_OUTPUT = 16 << 20  # per stream; the host asks for less when it wants


def _reader(stream, buf, limit):
    kept = 0
    while True:
        chunk = stream.read1(65536)
        if not chunk:
            return
        if kept < limit:  # keep reading past the limit so the writer never blocks
            buf.append(chunk)
            kept += len(chunk)


def _exec(req):
    limit = min(int(req.get("max_output", MAX_OUTPUT)), MAX_OUTPUT)
    env = req.get("env") or dict(os.environ)
    argv = req["argv"]
    stdin = base64.b64decode(req["stdin"]) if req.get("stdin") is not None else None
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, cwd=req.get("cwd") or None, env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as e:
        return {"returncode": 127, "stdout": "", "stderr": base64.b64encode(f"{argv[0]}: {e.strerror}\n".encode()).decode(),
                "timed_out": False, "duration": 0.0}
    out, err = [], []
    threads = [threading.Thread(target=_reader, args=(proc.stdout, out, limit), daemon=True),
               threading.Thread(target=_reader, args=(proc.stderr, err, limit), daemon=True)]
    for t in threads:
        t.start()
    if stdin is not None:
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except OSError:
            pass
    timeout = req.get("timeout")
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    # A background child may hold the pipes open forever: take what is there, do not wait for EOF.
    deadline = time.monotonic() + 0.2
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return {
        "returncode": proc.returncode,
        "stdout": base64.b64encode(b"".join(out)[:limit]).decode(),
        "stderr": base64.b64encode(b"".join(err)[:limit]).decode(),
        "timed_out": timed_out,
        "duration": time.monotonic() - started,
    }


def _read(req):
    with open(req["path"], "rb") as f:
        data = f.read(int(req.get("max_bytes", MAX_OUTPUT)))
    return {"data": base64.b64encode(data).decode()}


def _write(req):
    path = req["path"]
    os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, int(req.get("mode", 0o644)))
    with os.fdopen(fd, "wb") as f:
        f.write(base64.b64decode(req["data"]))
    os.chmod(path, int(req.get("mode", 0o644)))
    return {}


def _attach(conn, req):
    """Hand this connection to a long-lived process as its stdin and stdout (the tmux control
    client of sandbox/tmux_channel.py): from then on the host talks to it directly, with no relay in
    between. Nothing is written on success: the process's own output is the answer."""
    proc = subprocess.Popen(req["argv"], cwd=req.get("cwd") or None, env=req.get("env") or dict(os.environ),
                            stdin=conn.fileno(), stdout=conn.fileno(), stderr=subprocess.DEVNULL,
                            start_new_session=True)
    threading.Thread(target=proc.wait, daemon=True).start()  # reaped when it exits


OPS = {"exec": _exec, "read": _read, "write": _write, "ping": lambda req: {"pid": os.getpid()}}


def _serve(conn):
    with conn:
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(1 << 20)
            if not chunk:
                return
            data += chunk
        try:
            req = json.loads(data)
            if req["op"] == "attach":  # the connection now belongs to the process (our copy closes here)
                return _attach(conn, req)
            reply = {"ok": True, **OPS[req["op"]](req)}
        except Exception as e:  # the host gets every failure as data, the server lives on
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        conn.sendall(json.dumps(reply).encode() + b"\n")


def main(path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path + ".tmp"
    srv.bind(tmp)
    srv.listen(64)
    os.rename(tmp, path)  # the host waits for this name: it appears only once we accept
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=_serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv[1])
