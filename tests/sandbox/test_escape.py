"""The escape suite: what the agent's commands must never reach. Each case is bounded in time and count."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

from agentmill.sandbox import BwrapSandbox, Limits
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, in_sandbox, run

pytestmark = sandbox


def test_commands_never_run_as_host_root():
    r = run(in_sandbox("cat /proc/self/uid_map; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status"))
    assert r.returncode == 0, r.stderr
    inside, outside, _count = r.stdout.split("\n")[0].split()
    assert outside != "0", "uid 0 inside must map to an unprivileged host uid"
    for line in r.stdout.strip().splitlines()[1:]:
        assert line.split()[1] == "0000000000000000", line


def test_network_connect_refused_including_host_loopback():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    accepted = []
    srv.settimeout(0.2)

    def accept_loop(deadline=time.monotonic() + 15):
        while time.monotonic() < deadline:
            try:
                accepted.append(srv.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept_loop, daemon=True)
    t.start()
    script = f"""
import socket
for host, port in [("127.0.0.1", {port}), ("10.255.255.1", 80), ("1.1.1.1", 443)]:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, port)); print("CONNECTED", host)
    except OSError as e:
        print("refused", host, type(e).__name__)
try:
    socket.getaddrinfo("pypi.org", 443); print("RESOLVED")
except OSError:
    print("no dns")
"""
    r = run(in_sandbox(["python3", "-c", script]))
    srv.close()
    assert "CONNECTED" not in r.stdout and "RESOLVED" not in r.stdout, r.stdout
    assert r.stdout.count("refused") == 3, r.stdout + r.stderr
    assert accepted == []


def test_writes_outside_workspace_fail():
    script = """
for p in /usr/agentmill-escape /etc/agentmill-escape /usr/local/agentmill-escape /proc/sys/kernel/hostname; do
  if echo x > "$p" 2>/dev/null; then echo "WROTE $p"; else echo "denied $p"; fi
done
mount -o remount,rw / 2>/dev/null && echo REMOUNTED
mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED_USR
echo ok > /app/inside && echo wrote-workspace
"""
    r = run(in_sandbox(script))
    assert "WROTE" not in r.stdout and "REMOUNTED" not in r.stdout, r.stdout
    assert r.stdout.count("denied") == 4 and "wrote-workspace" in r.stdout
    assert not Path("/usr/agentmill-escape").exists() and not Path("/etc/agentmill-escape").exists()


def test_host_filesystem_outside_mounts_invisible(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret")
    r = run(in_sandbox(f"cat {secret} 2>&1; ls /work /var/cache 2>&1; echo done"))
    assert "host-secret" not in r.stdout
    assert "done" in r.stdout


def test_host_environment_invisible(monkeypatch):
    monkeypatch.setenv("AGENTMILL_CANARY_SECRET", "s3cr3t-value")
    r = run(in_sandbox("env; cat /proc/1/environ | tr '\\0' '\\n'"))
    assert "s3cr3t-value" not in r.stdout and "AGENTMILL_CANARY" not in r.stdout
    names = {line.split("=", 1)[0] for line in r.stdout.splitlines() if "=" in line}
    assert names <= {"PATH", "HOME", "LANG", "TERM", "USER", "PWD", "SHLVL", "_", "OLDPWD"}, names


def test_host_root_home_unreadable():
    home = Path("/root")
    canary = home / ".agentmill-canary"
    if os.geteuid() == 0:
        canary.write_text("root-canary")
    try:
        r = run(
            in_sandbox(
                "cat /root/.agentmill-canary 2>&1; ls -a /root; cat /proc/1/root/root/.agentmill-canary 2>&1; echo end"
            )
        )
        assert "root-canary" not in r.stdout
        assert ".pyenv" not in r.stdout and ".cache" not in r.stdout
        assert "end" in r.stdout
    finally:
        if os.geteuid() == 0:
            canary.unlink(missing_ok=True)


def _pids_of_uid(uid: int) -> list[int]:
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if p.stat().st_uid == uid:
                    pids.append(int(p.name))
            except FileNotFoundError:
                pass
    return pids


def test_background_process_does_not_outlive_stop():
    async def go():
        sb = BwrapSandbox(fresh_spec())
        await sb.start()
        uid = sb.uid
        r = await sb.exec(
            "nohup sleep 1000 >/dev/null 2>&1 & setsid sleep 1001 >/dev/null 2>&1 < /dev/null & "
            "(trap '' TERM HUP; exec sleep 1002) >/dev/null 2>&1 & echo started",
            timeout=10,
        )
        assert "started" in r.stdout
        before = _pids_of_uid(uid)
        await sb.stop()
        for _ in range(100):
            left = _pids_of_uid(uid)
            if not left:
                break
            await asyncio.sleep(0.02)
        return before, left

    before, left = run(go())
    assert len(before) >= 3, "the background processes should have been running"
    assert left == [], f"processes survived stop: {left}"


def test_process_burst_is_capped():
    script = """
import os, time
n = 0
for i in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(5); os._exit(0)
    n += 1
print("forked", n)
"""
    r = run(in_sandbox(["python3", "-c", script], timeout=30, limits=Limits(pids=64)))
    forked = int(r.stdout.split()[-1])
    assert forked < 64, r.stdout


def test_large_allocation_refused():
    script = """
try:
    b = bytearray(4 << 30)
    print("ALLOCATED")
except MemoryError:
    print("refused")
"""
    r = run(in_sandbox(["python3", "-c", script], timeout=30, limits=Limits(memory_mb=1024)))
    assert "refused" in r.stdout and "ALLOCATED" not in r.stdout, r.stdout + r.stderr


def test_endless_loop_killed_at_timeout():
    started = time.monotonic()
    r = run(in_sandbox("while :; do :; done", timeout=1.0))
    elapsed = time.monotonic() - started
    assert r.timed_out and r.returncode != 0
    assert elapsed < 10


def test_private_tmp_per_sandbox():
    async def go():
        a, b = BwrapSandbox(fresh_spec()), BwrapSandbox(fresh_spec())
        await a.start()
        await b.start()
        try:
            await a.exec("echo from-a > /tmp/shared", timeout=5)
            return await b.exec("cat /tmp/shared 2>&1 || echo missing", timeout=5), a.uid != b.uid
        finally:
            await a.stop()
            await b.stop()

    r, distinct = run(go())
    assert "from-a" not in r.stdout and "missing" in r.stdout
    assert distinct, "each sandbox runs as its own host uid"
