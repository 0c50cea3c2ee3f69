"""The agent's internet (sandbox/internet.py): public addresses reachable, the host and private
ranges not, and the agent cannot lift the rules. Each attack has its honest twin beside it.

No test here sends a packet to a private range if its defence were gone: before a connection to a
private address the firewall is read and must hold that range, and the planted defects (in the
commit messages) were planted against the host's own address and loopback only."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentmill.sandbox import create_sandbox
from agentmill.sandbox.conformance import fresh_spec
from tests.network.helpers import (
    FETCH,
    gateway,
    host_address,
    host_server,
    internet_tools,
    probe,
    rejected,
    ruleset,
)

pytestmark = internet_tools

# the sandbox's own server has bound and listens once its port file is there (a loaded machine may
# take seconds to start its python): wait for it, not for a fixed time
WAIT_FOR_PORT = "for i in $(seq 300); do [ -s /tmp/port ] && break; sleep 0.1; done; cat /tmp/port"


def listen(host: str, port: int) -> str:
    """A shell command: a server in the sandbox, in the background, that writes its port to /tmp/port
    once it listens (renamed into place: never seen half-written)."""
    code = (
        f"import os, socket, time\ns = socket.socket(); s.bind(({host!r}, {port})); s.listen(1)\n"
        "open('/tmp/port.new', 'w').write(str(s.getsockname()[1])); os.rename('/tmp/port.new', '/tmp/port')\n"
        "time.sleep(60)"
    )
    return f'python3 -c "{code}" >/dev/null 2>&1 &'


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 240))


async def _with_internet(body, backend: str = "bwrap", internet: bool = True):
    sb = create_sandbox(fresh_spec(internet=internet), backend=backend)
    await sb.start()
    try:
        return await body(sb)
    finally:
        await sb.stop()


@pytest.mark.parametrize("backend", ["bwrap", "bwrap-overlay"])
def test_the_agent_reaches_pypi_by_name(backend):
    # honest: names resolve through pasta's forwarder and HTTPS to a public registry works
    async def body(sb):
        return await sb.exec(["python3", "-c", FETCH], timeout=60)

    r = _run(_with_internet(body, backend))
    assert r.returncode == 0 and r.stdout.strip() == "200", r.output


def test_without_internet_nothing_is_reachable():
    # the default spec, for contrast: no interface but loopback, no names
    async def body(sb):
        return await sb.exec(["python3", "-c", FETCH], timeout=60)

    r = _run(_with_internet(body, internet=False))
    assert r.returncode != 0 and "200" not in r.stdout


def test_the_host_loopback_is_unreachable():
    # attack: a server on the host's 127.0.0.1, started before the sandbox (pasta's port forwarding
    # looks for bound ports then); the agent tries it on its loopback and on the gateway's address
    # (which pasta maps to the host's loopback unless told not to)
    gw = gateway()

    async def body(sb):
        inside = await sb.exec(f"{listen('127.0.0.1', 0)} {WAIT_FOR_PORT}", timeout=60)
        own = await probe(sb, f"127.0.0.1:{inside.stdout.strip()}")
        seen = await probe(sb, *[f"{h}:{port}" for h in ("127.0.0.1", gw) if h])
        return own, seen

    with host_server("127.0.0.1") as (port, accepted):
        own, seen = _run(_with_internet(body))
        reached = len(accepted)
    assert list(own.values()) == ["connected"]  # honest: the sandbox's own loopback is its own
    assert "connected" not in seen.values() and reached == 0, seen


def test_a_server_on_the_hosts_own_address_is_unreachable():
    # attack: a server bound on the host's own (non-loopback) address; the firewall rejects the
    # host's addresses and networks itself, whatever address pasta gave the namespace
    address = host_address()
    if address is None:
        pytest.skip("the host has no non-loopback IPv4 address")

    async def body(sb):
        before = rejected(ruleset(sb), "host")
        seen = await probe(sb, f"{address}:{port}")
        return seen, rejected(ruleset(sb), "host") - before

    with host_server(address) as (port, accepted):
        seen, counted = _run(_with_internet(body))
        reached = len(accepted)
    assert seen == {f"{address}:{port}": "EHOSTUNREACH"} and reached == 0, seen
    assert counted >= 1  # the rule said no, where the harness can see it


def test_private_ranges_are_refused_in_the_namespace():
    # attack: private, shared and link-local addresses (cloud metadata among them). The firewall is
    # read first and must hold each range: without it, this test would not send a thing.
    targets = ["10.255.255.1:80", "172.31.255.1:80", "192.168.255.1:80", "100.64.0.1:80", "169.254.169.254:80"]

    async def body(sb):
        rules = ruleset(sb)
        for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"):
            assert net in rules, f"the firewall lacks {net}: not probing"
        before = rejected(rules, "blocked")
        seen = await probe(sb, *targets)
        udp = await sb.exec(
            [
                "python3",
                "-c",
                "import socket\ntry:\n socket.socket(2, 2).sendto(b'x', ('10.255.255.1', 53))\n"
                "except OSError as e:\n print(e.errno)",
            ],
            timeout=30,
        )
        return seen, udp.stdout.strip(), rejected(ruleset(sb), "blocked") - before

    seen, udp_errno, counted = _run(_with_internet(body))
    assert set(seen.values()) == {"EHOSTUNREACH"}, seen  # at once, from the rule: no timeout
    assert udp_errno == "1"  # EPERM: the datagram never left
    assert counted >= len(targets) + 1


def test_private_v4_through_nat64_and_6to4_is_refused_in_the_namespace():
    # attack: a private v4 address written inside an IPv6 prefix that a NAT64 gateway or a 6to4
    # relay on the host's network would translate back (64:ff9b::a00:1 is 10.0.0.1). As above, the
    # firewall is read first and must hold each image (planted: no images; the check below fires).
    targets = ["[64:ff9b::aff:ff01]:80", "[64:ff9b::a9fe:a9fe]:80", "[2002:a00:1::1]:80", "[64:ff9b:1::a00:1]:80"]

    async def body(sb):
        rules = ruleset(sb)
        for net in ("64:ff9b::a00:0/104", "64:ff9b::a9fe:0/112", "2002:a00::/24", "64:ff9b:1::/48"):
            assert net in rules, f"the firewall lacks {net}: not probing"
        before = rejected(rules, "blocked")
        seen = await probe(sb, *(t.replace("[", "").replace("]", "") for t in targets))
        return seen, rejected(ruleset(sb), "blocked") - before

    seen, counted = _run(_with_internet(body))
    assert set(seen.values()) <= {"EHOSTUNREACH", "EACCES"}, seen
    assert counted >= len(targets)


def test_the_agent_cannot_lift_the_firewall():
    # attack: root of its own sandbox, the agent flushes the rules, deletes routes, downs the link;
    # its user namespace is a child of the one owning the network namespace, so each fails
    async def body(sb):
        before = ruleset(sb)
        r = await sb.exec(
            "nft flush ruleset; echo nft=$?; ip route del default; echo route=$?; "
            "ip link set eth0 down; echo link=$?; echo 0 > /proc/sys/net/ipv4/ip_forward; echo sysctl=$?",
            timeout=30,
        )
        after = ruleset(sb)  # honest twin: the namespace's owner (the harness) reads and could change it
        fetched = await sb.exec(["python3", "-c", FETCH], timeout=60)
        return r, before, after, fetched

    r, before, after, fetched = _run(_with_internet(body))
    results = dict(line.split("=") for line in r.stdout.split() if "=" in line)
    assert all(code != "0" for code in results.values()) and len(results) == 4, r.output
    assert "Operation not permitted" in r.stderr
    strip = lambda rules: [line for line in rules.splitlines() if "counter" not in line]  # noqa: E731
    assert strip(after) == strip(before) and "table inet agentmill" in after
    assert fetched.stdout.strip() == "200", fetched.output  # its route and link are as they were


def _free_host_port() -> int:
    """A port below the ephemeral range that no host socket holds: pasta's automatic forwarding
    leaves ephemeral ports alone, so the server must sit where it would forward."""
    import random
    import socket

    for port in random.sample(range(20000, 30000), 50):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in 20000-29999")


def test_the_sandbox_serves_nothing_to_the_host():
    # attack the other way: a server in the sandbox must not appear on the host's ports (pasta
    # forwards the namespace's bound ports to the host unless told not to)
    import socket

    port = _free_host_port()

    async def body(sb):
        # and a moment more: pasta's automatic forwarding, were it on, would have seen the port by now
        await sb.exec(f"{listen('0.0.0.0', port)} {WAIT_FOR_PORT}; sleep 2", timeout=60)
        inside = await probe(sb, f"127.0.0.1:{port}")  # honest: it listens, inside
        s = socket.socket()
        s.settimeout(3)
        try:
            s.connect(("127.0.0.1", port))
            return inside, "connected"
        except OSError as e:
            return inside, type(e).__name__
        finally:
            s.close()

    inside, from_host = _run(_with_internet(body))
    assert list(inside.values()) == ["connected"]
    assert from_host != "connected"


def test_a_spec_with_internet_is_refused_by_a_backend_without_it():
    from agentmill.errors import SandboxError
    from agentmill.sandbox import BwrapSandbox, sandbox_backend
    from agentmill.sandbox.registry import unregister_backend

    @sandbox_backend("no-internet-test")
    class _Plain(BwrapSandbox):
        capabilities = frozenset(BwrapSandbox.capabilities - {"internet"})

    try:
        with pytest.raises(SandboxError, match="cannot give a sandbox the internet"):
            create_sandbox(fresh_spec(internet=True), backend="no-internet-test")
        create_sandbox(fresh_spec(), backend="no-internet-test")  # twin: without it, fine
    finally:
        unregister_backend("no-internet-test")


def test_the_rules_hold_the_host_networks_and_dns_only():
    from agentmill.sandbox.internet import DNS_ADDRESS, firewall_rules

    rules = firewall_rules(["192.0.2.7", "192.0.2.0/24", "fd00::7"])
    assert "192.0.2.0/24" in rules and "fd00::7" in rules
    assert "64:ff9b::c000:200/120" in rules and "2002:c000:200::/40" in rules  # the host's v4 through NAT64, 6to4
    assert f"ip daddr {DNS_ADDRESS} meta l4proto {{ tcp, udp }} th dport 53 accept" in rules
    assert json.dumps(rules)  # one string: passed to nft on its stdin
