"""What the network tests share: a probe the agent runs, a host server that counts who reached it,
and the namespace's firewall as the harness (its owner) sees it."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from tests.conftest import needs_sandbox

internet_tools = pytest.mark.skipif(
    not needs_sandbox() or shutil.which("pasta") is None or shutil.which("nft") is None,
    reason="bubblewrap, passt (pasta) and nftables needed: scripts/setup.sh installs them",
)

# Run inside the sandbox: each HOST:PORT argument -> "connected" or the errno's name ("EHOSTUNREACH").
PROBE = r"""
import errno, json, socket, sys
out = {}
for spec in sys.argv[1:]:
    host, port = spec.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.settimeout(5)
    try:
        s.connect((host, int(port)))
        out[spec] = "connected"
    except OSError as e:
        out[spec] = errno.errorcode.get(e.errno, type(e).__name__) if e.errno else type(e).__name__
    finally:
        s.close()
print(json.dumps(out))
"""

FETCH = "import urllib.request; print(urllib.request.urlopen('https://pypi.org/simple/six/', timeout=20).status)"


async def probe(sb, *targets: str) -> dict[str, str]:
    r = await sb.exec(["python3", "-c", PROBE, *targets], timeout=60)
    assert r.returncode == 0, r.output
    return json.loads(r.stdout)


def namespace_pid(sb) -> int:
    """A process in the sandbox's network namespace: the first child of its launch chain's pasta."""
    pid = sb._proc.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert children, "pasta has no child: the sandbox has no network namespace of its own"
    return int(children[0])


def ruleset(sb) -> str:
    """The namespace's nftables ruleset with its counters, read by the harness (host root)."""
    r = subprocess.run(
        ["nsenter", f"--net=/proc/{namespace_pid(sb)}/ns/net", "nft", "list", "ruleset"],
        capture_output=True,
        text=True,
        check=True,
    )
    return r.stdout


def rejected(rules: str, comment: str) -> int:
    """Packets the rules commented `comment` ("host", "blocked") rejected, both families together."""
    return sum(int(n) for n in re.findall(rf"counter packets (\d+) bytes \d+ reject .*comment \"{comment}\"", rules))


def host_address() -> str | None:
    """The host's first non-loopback IPv4 address."""
    out = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True, check=True).stdout
    for link in json.loads(out):
        for a in link.get("addr_info", []):
            if not ipaddress.ip_address(a["local"]).is_loopback:
                return a["local"]
    return None


def gateway() -> str | None:
    out = subprocess.run(["ip", "-j", "route", "show", "default"], capture_output=True, text=True).stdout
    routes = json.loads(out or "[]")
    return routes[0].get("gateway") if routes else None


@contextlib.contextmanager
def host_server(address: str):
    """A TCP server on the host at `address` (port chosen by the kernel); yields (port, accepted)."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((address, 0))
    srv.listen(8)
    srv.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(srv.accept()[0])

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join()
        srv.close()
        for c in accepted:
            c.close()
