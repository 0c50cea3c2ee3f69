"""The conformance suite every sandbox backend must pass (tests/sandbox/test_conformance.py runs it
over each registered backend). Each check starts its own sandboxes through a factory, so a backend
is judged only by what crosses the protocol: exec, files, timeouts, limits, no network, cleanup,
isolation between sandboxes. A failed check raises ConformanceFailure saying what broke.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from agentmill.errors import SandboxError
from agentmill.runtime.paths import scratch_temp
from agentmill.sandbox.protocol import Capability, Limits, Sandbox, SandboxSpec

Factory = Callable[[SandboxSpec], Sandbox]
Check = Callable[[Factory], Awaitable[None]]
CHECKS: dict[str, Check] = {}


class ConformanceFailure(SandboxError, AssertionError):
    """A backend broke a rule of the protocol (an AssertionError too, so pytest reports it as a failed check)."""


def _check(fn: Check) -> Check:
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise ConformanceFailure(what)


def fresh_spec(**kw) -> SandboxSpec:
    """A sandbox over an empty root with /app as the working directory."""
    rootfs = scratch_temp("conformance") / "rootfs"
    (rootfs / "app").mkdir(parents=True)
    kw.setdefault("workdir", "/app")
    return SandboxSpec(rootfs=rootfs, **kw)


@contextlib.asynccontextmanager
async def _running(factory: Factory, **kw):
    sb = factory(fresh_spec(**kw))
    await sb.start()
    try:
        yield sb
    finally:
        await sb.stop()


def _host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def _find_inside(marker: str) -> list[str]:
    """argv for a process scan inside the sandbox; the marker is split so the scan never finds itself."""
    head, tail = marker[:4], marker[4:]
    return [
        "python3",
        "-c",
        "import os\n"
        f"m = ({head!r} + {tail!r}).encode()\n"
        "for p in os.listdir('/proc'):\n"
        "    if p.isdigit() and int(p) != os.getpid():\n"
        "        try:\n"
        "            if m in open(f'/proc/{p}/cmdline', 'rb').read(): print(p)\n"
        "        except OSError: pass\n",
    ]


@_check
async def check_exec(factory: Factory) -> None:
    async with _running(factory, env={"SPEC_VAR": "from-spec"}) as sb:
        r = await sb.exec("echo out; echo err >&2; exit 3")
        _expect((r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n"), f"shell exec: {r}")
        r = await sb.exec(["printf", "%s|", "a b", "$HOME"])
        _expect(r.stdout == "a b|$HOME|", f"argv exec must not go through a shell: {r.stdout!r}")
        r = await sb.exec('echo "$SPEC_VAR $CALL_VAR $(pwd)"', env={"CALL_VAR": "from-call"})
        _expect(r.stdout.strip() == "from-spec from-call /app", f"env and workdir: {r.stdout!r}")
        r = await sb.exec("pwd", cwd="/tmp")
        _expect(r.stdout.strip() == "/tmp", f"cwd: {r.stdout!r}")
        r = await sb.exec(["cat"], stdin=b"piped\x00bytes")
        _expect(r.stdout == "piped\x00bytes", f"stdin: {r.stdout!r}")
        r = await sb.exec("head -c 100000 /dev/zero | tr '\\0' x", max_output=1000)
        _expect(0 < len(r.stdout) <= 100_000 and r.returncode == 0, "max_output must bound what comes back, not fail")
        # One set of namespaces per sandbox: a background process outlives the exec that started it.
        await sb.exec("sleep 300 >/dev/null 2>&1 & echo $! > /tmp/bg.pid")
        r = await sb.exec("kill -0 $(cat /tmp/bg.pid) && echo alive")
        _expect(r.stdout.strip() == "alive", "a background process must persist between execs")


@_check
async def check_files(factory: Factory) -> None:
    async with _running(factory) as sb:
        blob = bytes(range(256)) * 64
        await sb.write_file("/app/deep/dir/blob.bin", blob, mode=0o750)
        _expect(await sb.read_file("/app/deep/dir/blob.bin") == blob, "write_file/read_file must round-trip bytes")
        r = await sb.exec("stat -c %a /app/deep/dir/blob.bin; sha256sum < /app/deep/dir/blob.bin")
        mode, digest = r.stdout.split()[:2]
        import hashlib

        _expect(mode == "750", f"write_file must apply the mode, got {mode}")
        _expect(digest == hashlib.sha256(blob).hexdigest(), "commands must see the bytes written")
        await sb.exec("printf made-inside > /app/inside.txt")
        _expect(await sb.read_file("/app/inside.txt") == b"made-inside", "read_file must see files commands made")
        await sb.write_file("/app/text.txt", "héllo")
        _expect(await sb.read_file("/app/text.txt") == "héllo".encode(), "str data is written as UTF-8")
        try:
            await sb.read_file("/app/missing")
        except FileNotFoundError:
            pass
        else:
            raise ConformanceFailure("read_file of a missing path must raise FileNotFoundError")


@_check
async def check_timeouts(factory: Factory) -> None:
    async with _running(factory) as sb:
        marker = f"am-timeout-{uuid.uuid4().hex[:8]}"
        started = time.monotonic()
        r = await sb.exec(f"(exec -a {marker} sleep 300) & sleep 300", timeout=1)
        took = time.monotonic() - started
        _expect(r.timed_out, "a command past its timeout must report timed_out")
        _expect(took < 10, f"the timeout must return promptly, took {took:.1f}s")
        await asyncio.sleep(0.2)
        r = await sb.exec(_find_inside(marker))
        _expect(r.stdout.strip() == "", f"a timed-out command's children must be killed: {r.stdout!r}")
        r = await sb.exec("echo still-usable", timeout=10)
        _expect(r.stdout.strip() == "still-usable" and not r.timed_out, "the sandbox must stay usable after a timeout")


@_check
async def check_limits(factory: Factory) -> None:
    limits = Limits(memory_mb=256, pids=64, storage_mb=8)
    async with _running(factory, limits=limits) as sb:
        r = await sb.exec(["python3", "-c", "b = bytearray(1 << 30); print('allocated')"], timeout=60)
        _expect("allocated" not in r.stdout and r.returncode != 0, "1 GiB must not fit in a 256 MiB sandbox")
        fork = (
            "import os, time\nkids = []\nfor _ in range(200):\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30); os._exit(0)\n"
            "    kids.append(pid)\nprint(len(kids), flush=True)\nfor k in kids:\n    os.kill(k, 9)\n"
        )
        r = await sb.exec(["python3", "-c", fork], timeout=60)
        count = int(r.stdout.split()[0]) if r.stdout.split() else -1
        _expect(
            0 < count < limits.pids,
            f"pids limit {limits.pids}: {count} extra processes ran at once ({r.stderr[-200:]})",
        )
        r = await sb.exec("dd if=/dev/zero of=/app/big bs=1M count=32 2>&1; stat -c %s /app/big", timeout=60)
        size = int(r.stdout.split()[-1]) if r.stdout.split() and r.stdout.split()[-1].isdigit() else 0
        _expect(size <= limits.storage_mb << 20, f"storage limit {limits.storage_mb} MiB: wrote a {size}-byte file")


@_check
async def check_no_network(factory: Factory) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept_loop() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(srv.accept()[0])

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    port = srv.getsockname()[1]
    script = (
        "import socket\n"
        f"for host, port in [('127.0.0.1', {port}), ('1.1.1.1', 443), ('151.101.0.223', 443)]:\n"
        "    s = socket.socket(); s.settimeout(3)\n"
        "    try:\n        s.connect((host, port)); print('CONNECTED', host)\n"
        "    except OSError:\n        pass\n"
        "try:\n    socket.getaddrinfo('pypi.org', 443); print('RESOLVED')\nexcept OSError:\n    pass\n"
    )
    try:
        async with _running(factory) as sb:
            r = await sb.exec(["python3", "-c", script], timeout=30)
    finally:
        stop.set()
        thread.join()
        srv.close()
        for c in accepted:
            c.close()
    _expect("CONNECTED" not in r.stdout and not accepted, f"network must be unreachable: {r.stdout.strip()}")
    _expect("RESOLVED" not in r.stdout, "names must not resolve without a network")


@_check
async def check_internet_spares_the_host(factory: Factory) -> None:
    """A backend that declares Capability.INTERNET gives a spec with internet=True a network (an
    interface beside loopback) from which the host is out of reach: a server on the host's loopback
    and one on its own address accept nothing. Only the host is probed, never a private range: a
    backend without the defence would otherwise send real packets to someone's network."""
    probe = factory(fresh_spec())
    if Capability.INTERNET not in probe.capabilities:
        return
    servers = [_Listener("127.0.0.1"), *([_Listener(a)] if (a := _host_address()) else [])]
    script = (
        "import socket\n"
        "print('IFACES', ' '.join(name for _, name in socket.if_nameindex() if name != 'lo'))\n"
        f"for host, port in {[(srv.host, srv.port) for srv in servers]!r}:\n"
        "    s = socket.socket(); s.settimeout(3)\n"
        "    try:\n        s.connect((host, port)); print('CONNECTED', host)\n"
        "    except OSError:\n        pass\n"
    )
    try:
        async with _running(factory, internet=True) as sb:
            r = await sb.exec(["python3", "-c", script], timeout=60)
    finally:
        for srv in servers:
            srv.close()
    _expect(r.returncode == 0, f"the probe failed: {r.output[-300:]}")
    ifaces = r.stdout.split("IFACES", 1)[-1].split("\n", 1)[0].split()
    _expect(bool(ifaces), f"internet=True gave no interface beside loopback: {r.stdout.strip()}")
    reached = [srv.host for srv in servers if srv.accepted]
    _expect("CONNECTED" not in r.stdout and not reached, f"the host must be out of reach: {r.stdout.strip()} {reached}")


def _host_address() -> str | None:
    """The host's first non-loopback IPv4 address (its own, not a private range's other hosts)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.255", 9))  # UDP connect sends nothing: it only picks the source address
        address = s.getsockname()[0]
        return None if address.startswith("127.") else address
    return None


class _Listener:
    """A TCP server on the host that counts who reached it."""

    def __init__(self, host: str):
        self.host = host
        self.accepted: list[socket.socket] = []
        self._srv = socket.socket()
        self._srv.bind((host, 0))
        self._srv.listen(4)
        self._srv.settimeout(0.2)
        self.port = self._srv.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                self.accepted.append(self._srv.accept()[0])

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._srv.close()
        for c in self.accepted:
            c.close()


@_check
async def check_cleanup(factory: Factory) -> None:
    marker = f"am-cleanup-{uuid.uuid4().hex[:8]}"
    sb = factory(fresh_spec())
    await sb.start()
    try:
        await sb.exec(f"nohup setsid bash -c 'exec -a {marker} sleep 600' >/dev/null 2>&1 &")
        await asyncio.sleep(0.3)
        _expect(bool(_host_processes_with(marker)), "the planted background process must be running before stop")
    finally:
        await sb.stop()
    deadline = time.monotonic() + 5
    while _host_processes_with(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    left = _host_processes_with(marker)
    for pid in left:  # do not leak what the backend failed to kill
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    _expect(not left, f"stop() left processes behind: {left}")
    await sb.stop()  # idempotent
    try:
        await sb.exec("true")
    except SandboxError:
        pass
    else:
        raise ConformanceFailure("exec after stop() must raise SandboxError")


@_check
async def check_isolation(factory: Factory) -> None:
    marker = f"am-iso-{uuid.uuid4().hex[:8]}"
    async with _running(factory) as a, _running(factory) as b:
        await a.exec(
            f"echo secret > /app/{marker}; echo secret > /tmp/{marker}; echo secret > /root/{marker}; "
            f"(exec -a {marker} sleep 300) >/dev/null 2>&1 &"
        )
        await a.exec(
            "python3 -c \"import socket,time\ns=socket.socket(); s.bind(('127.0.0.1', 47111)); s.listen(1)\n"
            "open('/tmp/listening','w').close(); time.sleep(300)\" >/dev/null 2>&1 &"
        )
        await asyncio.sleep(0.5)
        r = await b.exec(f"ls /app/{marker} /tmp/{marker} /root/{marker} 2>/dev/null; true")
        _expect(r.stdout.strip() == "", f"one sandbox must not see another's files: {r.stdout!r}")
        _expect(
            bool((await a.exec(_find_inside(marker))).stdout.strip()),
            "the marker process must run in the first sandbox",
        )
        r = await b.exec(_find_inside(marker))
        _expect(r.stdout.strip() == "", f"one sandbox must not see another's processes: {r.stdout!r}")
        r = await b.exec(
            [
                "python3",
                "-c",
                "import socket\ns=socket.socket(); s.settimeout(2)\n"
                "try:\n    s.connect(('127.0.0.1', 47111)); print('CONNECTED')\nexcept OSError:\n    pass",
            ]
        )
        _expect("CONNECTED" not in r.stdout, "one sandbox must not reach another's loopback servers")
        r = await a.exec(f"cat /app/{marker} && test -e /tmp/listening && echo ok")
        _expect(r.stdout.split()[-1:] == ["ok"], "the first sandbox keeps its own state")


@_check
async def check_system_read_only(factory: Factory) -> None:
    async with _running(factory) as sb:
        r = await sb.exec(
            "for p in /usr/bin/am-probe /etc/am-probe; do touch $p 2>/dev/null && echo WROTE $p; done; "
            "touch /app/ok && echo workspace-writable"
        )
        _expect("WROTE" not in r.stdout, f"system directories must be read-only: {r.stdout.strip()}")
        _expect("workspace-writable" in r.stdout, "the workspace must be writable")


@_check
async def check_capabilities(factory: Factory) -> None:
    """A backend declares exactly what it offers beyond the core (protocol.Capability): each declared
    capability's members work on a started sandbox, and no undeclared one is there to be probed."""
    async with _running(factory) as sb:
        declared = sb.capabilities
        _expect(
            isinstance(declared, frozenset) and declared <= set(Capability.MEMBERS),
            f"capabilities must be a frozenset of {sorted(Capability.MEMBERS)}, got {declared!r}",
        )
        for capability, members in Capability.MEMBERS.items():
            present = [m for m in members if callable(getattr(type(sb), m, None)) or getattr(sb, m, None) is not None]
            if capability in declared:
                _expect(
                    len(present) == len(members),
                    f"declares {capability} but lacks {sorted(set(members) - set(present))}",
                )
            else:
                _expect(not present, f"offers {present} but does not declare {capability}")
        if Capability.CONTROL_DIR in declared:
            _expect(
                Path(sb.control_dir).is_dir() and isinstance(sb.uid, int), "control_dir must be a folder, uid an int"
            )
        if Capability.GUEST_SOCKET in declared:
            _expect(Path(sb.guest_socket).exists(), "guest_socket must lead to the running guest")


async def run_check(name: str, factory: Factory) -> None:
    await CHECKS[name](factory)
