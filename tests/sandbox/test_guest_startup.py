"""The guest exec server's start-up cost: what it imports before its socket appears, and on the hot
path (ping, exec, read, write, attach). The usual modules (json, socket, subprocess, threading,
base64, signal) cost 18 ms of CPU on every sandbox start (docs/benchmarks.md), so a top-level import
of any of them is a regression these tests catch; each check is also run on a copy of the server
with the defect planted, and must fire.

The server runs inside a sandbox, under the sandbox's python3 with `-I -S -X importtime`, as
bwrap.py launches it; a probe (also in the sandbox) waits for its socket, then drives the ops.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from agentmill.sandbox import BwrapSandbox
from agentmill.sandbox.guest_code import GUEST_DIR, LAUNCH
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, run

pytestmark = sandbox

# C cores the server may import besides what `import os` brings: cheap, no regular expressions.
CHEAP = {"server", "_socket", "_json", "_thread", "binascii", "_signal", "time", "errno", "posix"}
# What each costs a few ms at start (regex compiles, enums, module chains): never on the hot path.
EXPENSIVE = {
    "json",
    "re",
    "socket",
    "subprocess",
    "threading",
    "base64",
    "signal",
    "enum",
    "selectors",
    "contextlib",
    "functools",
    "collections",
    "warnings",
    "locale",
    "struct",
    "select",
}

SERVER = Path(__file__).resolve().parents[2] / "src/agentmill/sandbox/guest/server.py"

# Runs inside the sandbox: start the server as bwrap.py does (plus -X importtime), record what it
# imported once its socket is there, drive every hot-path op, record again.
PROBE = r"""
import base64, json, os, socket, subprocess, sys, time
server, launch, log = sys.argv[1], sys.argv[2], "/tmp/importtime.log"

def imported():
    with open(log) as f:
        return [line.split("|")[-1].strip() for line in f if line.startswith("import time:")][1:]

def bare(code):
    r = subprocess.run(["/usr/bin/python3", "-I", "-S", "-X", "importtime", "-c", code], capture_output=True, text=True)
    return [line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")][1:]

def ask(req, raw=False):
    s = socket.socket(socket.AF_UNIX)
    s.connect("/tmp/probe.sock")
    s.sendall(json.dumps(req).encode() + b"\n")
    if raw:
        return s
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)

proc = subprocess.Popen(["/usr/bin/python3", "-I", "-S", "-X", "importtime", "-c", launch, "/tmp/probe.sock"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
while not os.path.exists("/tmp/probe.sock"):
    if proc.poll() is not None:
        sys.exit("server died: " + open(log).read()[-2000:])
    time.sleep(0.002)
time.sleep(0.2)  # anything imported right after the rename, before a request, counts as start-up
start = imported()
env = {"PATH": "/usr/bin:/bin"}
replies = [
    ask({"op": "ping"}),
    ask({"op": "exec", "argv": ["/bin/sh", "-c", "cat; echo err >&2"], "env": env, "cwd": "/tmp",
         "stdin": base64.b64encode(b"in").decode(), "timeout": 30, "max_output": 100}),
    ask({"op": "exec", "argv": ["sleep", "5"], "env": env, "timeout": 0.2}),
    ask({"op": "exec", "argv": ["no-such-command"], "env": env}),
    ask({"op": "write", "path": "/tmp/f", "data": base64.b64encode(b"data").decode(), "mode": 0o600}),
    ask({"op": "read", "path": "/tmp/f"}),
]
tool = "#!/bin/sh\necho tool in $(pwd)\n"
cases = {
    "write_tool": {"op": "write", "path": "/tmp/bin/tool", "data": base64.b64encode(tool.encode()).decode(), "mode": 0o755},
    "path_search": {"op": "exec", "argv": ["tool"], "env": {"PATH": "/nonexistent:/tmp/f:/tmp/bin"}, "cwd": "/tmp"},
    "no_cwd": {"op": "exec", "argv": ["pwd"], "env": env, "cwd": "/nonexistent"},
    "not_executable": {"op": "exec", "argv": ["/tmp/f"], "env": env},
    "child_state": {"op": "exec", "argv": ["/usr/bin/python3", "-I", "-c",
        "import os; print(os.getsid(0) == os.getpid(), sorted(os.listdir('/proc/self/fd')), os.getcwd())"],
        "env": env},
    "ignored_signals": {"op": "exec", "argv": ["/bin/grep", "SigIgn", "/proc/self/status"], "env": env},
    "background": {"op": "exec", "argv": ["/bin/sh", "-c", "(sleep 2; echo late) & echo early"], "env": env},
    "write_relative": {"op": "write", "path": "rel/x.txt", "data": base64.b64encode(b"rel").decode()},
    "read_relative": {"op": "read", "path": "rel/x.txt"},
    "bad_env": {"op": "exec", "argv": ["true"], "env": {"A=B": "x"}},
}
more = {name: ask(req) for name, req in cases.items()}
fds = "/proc/%d/fd" % replies[0]["pid"]
more["holds_home"] = any(os.readlink(fds + "/" + n) == os.getcwd() for n in os.listdir(fds))
more["attach_missing"] = json.loads(ask({"op": "attach", "argv": ["no-such-tmux"], "env": env}, raw=True).recv(1000))
attached = ask({"op": "attach", "argv": ["/bin/sh", "-c", "echo attached; exec cat"], "env": env}, raw=True)
echoed = b""
while not echoed.endswith(b"attached\n"):  # sent before the guest has handed it over, it would be
    echoed += attached.recv(100)         # part of the request
attached.sendall(b"through cat\n")
while not echoed.endswith(b"cat\n"):
    echoed += attached.recv(100)
echoed = echoed.decode()
attached.close()
time.sleep(0.2)
after = imported()
proc.kill()
print(json.dumps({"start": start, "after": after, "replies": replies, "echoed": echoed, "more": more,
                  "bare": bare("pass"), "with_os": bare("import os")}))
"""


def probe(source: str) -> dict:
    """Run the probe on this server source inside a fresh sandbox; its findings."""

    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            await sb.write_file("/tmp/server.py", source)
            launch = LAUNCH.replace(repr(GUEST_DIR), repr("/tmp"))  # bwrap.py's launch, this copy
            result = await sb.exec(["/usr/bin/python3", "-I", "-c", PROBE, "/tmp/server.py", launch], timeout=60)
            assert result.returncode == 0, result.output
            return json.loads(result.stdout)

    return run(go())


def start_up_extras(found: dict) -> set[str]:
    """Modules imported before the socket appeared beyond the interpreter's, os's and CHEAP."""
    return set(found["start"]) - set(found["bare"]) - set(found["with_os"]) - CHEAP


def test_the_guest_starts_with_cheap_imports_only_and_its_hot_path_adds_none():
    found = probe(SERVER.read_text())
    assert start_up_extras(found) == set()
    assert EXPENSIVE & set(found["start"]) == set()
    assert EXPENSIVE & set(found["after"]) == set(), "a hot-path op imported an expensive module"
    ping, ran, timed_out, missing, wrote, read = found["replies"]
    assert ping["ok"] and isinstance(ping["pid"], int)
    assert ran["ok"] and ran["returncode"] == 0 and not ran["timed_out"]
    assert (ran["stdout"], ran["stderr"]) == ("aW4=", "ZXJyCg==")  # "in", "err\n"
    assert timed_out["ok"] and timed_out["timed_out"] and timed_out["returncode"] == -9
    assert missing["returncode"] == 127 and missing["stderr"]  # "no-such-command: No such file..."
    assert wrote == {"ok": True} and read == {"ok": True, "data": "ZGF0YQ=="}
    assert found["echoed"] == "attached\nthrough cat\n"


# The server spawns with os.posix_spawn; on a Python without it (before 3.8), with fork + exec.
SPAWN_PATHS = {
    "posix_spawn": lambda source: source,
    "fork": lambda source: source.replace('_use_posix_spawn = hasattr(os, "posix_spawn")', "_use_posix_spawn = False"),
}


@pytest.mark.parametrize("path", SPAWN_PATHS)
def test_exec_and_attach_behave_as_popen_did(path):
    source = SERVER.read_text()
    variant = SPAWN_PATHS[path](source)
    assert path == "posix_spawn" or variant != source
    found = probe(variant)
    more = {name: reply for name, reply in found["more"].items()}
    b64 = lambda reply, key: base64.b64decode(reply[key]).decode()  # noqa: E731
    assert b64(more["path_search"], "stdout") == "tool in /tmp\n"
    assert (more["no_cwd"]["returncode"], b64(more["no_cwd"], "stderr")) == (127, "pwd: No such file or directory\n")
    assert b64(more["not_executable"], "stderr") == "/tmp/f: Permission denied\n"
    # A new session, only 0-2 inherited (3: listdir's own), the server's directory when no cwd is
    # given, and no signal ignored (the server's Python ignores SIGPIPE and SIGXFSZ).
    assert b64(more["child_state"], "stdout") == "True ['0', '1', '2', '3'] /app\n"
    ignored = int(b64(more["ignored_signals"], "stdout").split()[1], 16)
    assert ignored & (1 << (13 - 1) | 1 << (25 - 1)) == 0  # SIGPIPE, SIGXFSZ
    assert b64(more["background"], "stdout") == "early\n" and more["background"]["duration"] < 1.5
    assert more["write_relative"] == {"ok": True} and b64(more["read_relative"], "data") == "rel"
    assert more["bad_env"] == {
        "ok": False,
        "error": "ValueError: illegal environment variable name",
        "kind": "bad_request",
    }
    assert more["attach_missing"] == {
        "ok": False,
        "error": "FileNotFoundError: [Errno 2] No such file or directory: 'no-such-tmux'",
        "kind": "not_found",  # typed for the host: it never reads the message to tell (sandbox/bwrap.py)
    }
    assert found["echoed"] == "attached\nthrough cat\n"
    assert more["holds_home"]  # where it steps back to after a posix_spawn: not fallen back to fork


def test_the_launch_is_the_one_probed():
    """The probe starts the server as bwrap.py does; if the launch changes, the probe must too."""

    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            found = await sb.exec("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
            # -v says where the module's code came from: the host-compiled bytecode, not the source.
            loaded = await sb.exec(["/usr/bin/python3", "-I", "-S", "-v", "-c", LAUNCH.replace("server.main", "len")])
            return (
                [
                    line.split()
                    for line in found.stdout.splitlines()
                    if "server.main" in line and not line.startswith("bwrap ")
                ],
                [line for line in loaded.stderr.splitlines() if "code object from" in line and "server" in line],
            )

    processes, loaded = run(go())
    assert processes == [["/usr/bin/python3", "-I", "-S", "-c", *LAUNCH.split(), "/.agentmill/ctl/sock"]]
    assert loaded and loaded[0].endswith(
        f"code object from '{GUEST_DIR}/__pycache__/server.{sys.implementation.cache_tag}.pyc'"
    )


@pytest.mark.parametrize(
    "defect, where",
    [
        ("import subprocess\n", "start"),
        ("import json\n", "start"),
        ("import socket\n", "start"),
    ],
)
def test_a_planted_top_level_import_is_caught(defect, where):
    source = SERVER.read_text()
    anchor = "import binascii\n"
    assert anchor in source
    found = probe(source.replace(anchor, defect + anchor, 1))
    module = defect.split()[1]
    assert module in start_up_extras(found)
    assert module in set(found[where])


def test_a_planted_import_on_the_exec_path_is_caught():
    source = SERVER.read_text()
    anchor = "def _exec(req):\n"
    assert anchor in source
    found = probe(source.replace(anchor, anchor + "    import threading  # noqa\n", 1))
    assert "threading" not in found["start"]
    assert "threading" in EXPENSIVE & set(found["after"])


def test_the_json_fast_paths_match_json_exactly():
    """_loads and _dumps stand in for json.loads and json.dumps: same objects, same bytes, and
    anything the fast paths do not take goes to json itself (same errors)."""
    import runpy

    guest = runpy.run_path(str(SERVER))  # defines the functions; main() does not run
    replies = [
        {"ok": True, "returncode": -9, "stdout": "aGk=", "stderr": "", "timed_out": False, "duration": 0.00123},
        {"ok": False, "error": 'OSError: [Errno 2] héllo \udcff \u4e2d "quoted" \\ \n\t\x00'},
        {"ok": True, "pid": 2, "big": 10**30, "none": None, "float": 1e300, "neg": -0.0},
        {"ok": True, "nested": {"a": [1]}, "nan": float("nan")},  # not flat: json.dumps itself
    ]
    for reply in replies:
        assert guest["_dumps"](reply) == json.dumps(reply)
    requests = [
        json.dumps(r).encode() + b"\n"
        for r in (
            {"op": "exec", "argv": ["/bin/sh", "-c", "echo é"], "env": {"A": "\u4e2d"}, "timeout": 1.5, "stdin": None},
            {"op": "write", "path": "/x", "data": "", "mode": 420, "deep": [{"a": [1, 2.5e-3, True, None]}]},
        )
    ] + [b'{"op": "ping", "x": NaN, "y": -Infinity}\n', b'{"op": "\\ud800"}\r\n\t ']
    for raw in requests:
        assert repr(guest["_loads"](raw)) == repr(json.loads(raw))
    for bad in (b"not json\n", b'{"op": "ping"} trailing\n', b'{"op": "pi\xffng"}\n', b'{"op": 1e999999}\n'):
        try:
            expected = repr(json.loads(bad))
        except Exception as e:
            expected = f"{type(e).__name__}: {e}"
        try:
            got = repr(guest["_loads"](bad))
        except Exception as e:
            got = f"{type(e).__name__}: {e}"
        assert got == expected
