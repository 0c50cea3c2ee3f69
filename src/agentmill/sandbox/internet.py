"""A sandbox's user-mode internet: public addresses only, never the host or a private network.

For a spec with `internet=True` the sandbox's launch chain runs bwrap behind two more programs:

    pasta (passt) --config-net ...  --  sh -c 'nft -f <rules>; exec bwrap ...'

pasta makes a user namespace and a network namespace owned by it, connects them to the host's
network through its own sockets (no privilege, no bridge, no NAT), and runs `sh` in them as that
namespace's root. The sh applies the firewall below and execs bwrap, whose own user namespace is a
CHILD of pasta's: the agent, even as uid 0 with every capability of its own namespace, has no
CAP_NET_ADMIN over the network namespace, so it can neither flush the rules nor change routes.

What the agent can reach: public addresses (TCP, UDP, ping) and DNS through pasta's forwarder at
DNS_ADDRESS, which asks the host's resolver. What it cannot: the host's loopback (pasta's gateway
mapping is off, and so is port forwarding in both directions), the host's own addresses and the
networks it sits on, and the private, shared, link-local, multicast and reserved ranges below
(and their NAT64 and 6to4 images, which a gateway would translate back to them), which the firewall rejects in the namespace itself before pasta ever sees the packet.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess

from agentmill.errors import SandboxError

# pasta answers DNS sent here by asking the host's resolver (the address podman uses for the same).
# Link-local, so nothing real is ever sent to it: the firewall lets only port 53 through to it.
DNS_ADDRESS = "169.254.1.1"
RESOLV_CONF = f"nameserver {DNS_ADDRESS}\n"
TABLE = "agentmill"

BLOCKED_V4 = (
    "0.0.0.0/8",  # this network
    "10.0.0.0/8",  # private
    "100.64.0.0/10",  # shared (carrier-grade NAT)
    "127.0.0.0/8",  # loopback (the namespace's own is accepted first, on lo)
    "169.254.0.0/16",  # link-local: cloud metadata services
    "172.16.0.0/12",  # private
    "192.0.0.0/24",  # protocol assignments
    "192.168.0.0/16",  # private
    "198.18.0.0/15",  # benchmarking
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, broadcast
)
BLOCKED_V6 = (
    "::/127",  # unspecified, loopback
    "::ffff:0:0/96",  # IPv4-mapped: the v4 rules see those packets, this keeps v6 sockets honest too
    "fc00::/7",  # unique local
    "fe80::/10",  # link-local
    "ff00::/8",  # multicast
    "64:ff9b:1::/48",  # local-use NAT64 (RFC 8215): whatever v4 the site maps it to
    "2001::/32",  # Teredo: v4 tunnelled through a relay
)
# IPv6 prefixes that carry an IPv4 address in their bits: a NAT64 gateway (64:ff9b::/96) or a 6to4
# relay (2002::/16) on the host's network would deliver 64:ff9b::a00:1 to 10.0.0.1. Each blocked v4
# range (and the host's own v4 networks) is blocked in these images too.
_V4_IN_V6 = (("64:ff9b::", 96, 0), ("2002::", 16, 80))  # (prefix, where the v4 starts, shift)


def require_internet_tools() -> None:
    missing = [t for t in ("pasta", "nft") if shutil.which(t, path="/usr/sbin:/usr/bin:/sbin:/bin") is None]
    if missing:
        raise SandboxError(
            f"a sandbox with internet needs {' and '.join(missing)} on the host "
            "(install: apt-get install -y passt nftables; scripts/setup.sh does)"
        )


def host_networks() -> list[str]:
    """The host's own addresses and the networks they sit on (its LAN, its gateway), loopback aside:
    pasta gives the namespace the host's address, and a connection to a neighbour would leave the
    host for real."""
    out = subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True, check=True).stdout
    nets: set[str] = set()
    for link in json.loads(out or "[]"):
        for a in link.get("addr_info", []):
            iface = ipaddress.ip_interface(f"{a['local']}/{a['prefixlen']}")
            if iface.ip.is_loopback:
                continue
            nets.add(str(iface.network))
            nets.add(str(iface.ip))
    return sorted(nets)


def v4_images(nets) -> list[str]:
    """The NAT64 and 6to4 images of the IPv4 networks among `nets`."""
    images = []
    for n in nets:
        net = ipaddress.ip_network(n, strict=False)
        if net.version != 4:
            continue
        for prefix, at, shift in _V4_IN_V6:
            address = int(ipaddress.IPv6Address(prefix)) | (int(net.network_address) << shift)
            images.append(str(ipaddress.IPv6Network((address, at + net.prefixlen))))
    return images


def _by_version(nets, version: int) -> str:
    return ", ".join(n for n in nets if ipaddress.ip_network(n, strict=False).version == version) or (
        "0.0.0.0/32" if version == 4 else "::/128"  # nft refuses an empty literal set
    )


def firewall_rules(host: list[str]) -> str:
    """The nftables ruleset of the namespace: everything out is accepted but the host's own
    networks and the blocked ranges, which are rejected with a counter (an immediate "No route to
    host" for TCP, EPERM for UDP: nothing leaves). The host's networks come before the namespace's
    loopback: pasta gives the namespace the host's address, and the rule must not depend on that."""
    return f"""table inet {TABLE} {{
  set host4 {{ type ipv4_addr; flags interval; auto-merge; elements = {{ {_by_version(host, 4)} }} }}
  set host6 {{ type ipv6_addr; flags interval; auto-merge; elements = {{ {_by_version([*host, *v4_images(host)], 6)} }} }}
  set blocked4 {{ type ipv4_addr; flags interval; auto-merge; elements = {{ {_by_version(BLOCKED_V4, 4)} }} }}
  set blocked6 {{ type ipv6_addr; flags interval; auto-merge; elements = {{ {_by_version([*BLOCKED_V6, *v4_images(BLOCKED_V4)], 6)} }} }}
  chain output {{
    type filter hook output priority 0; policy accept;
    oifname "lo" meta l4proto {{ icmp, ipv6-icmp }} accept  # the rejections' own replies, to ourselves
    ip daddr {DNS_ADDRESS} meta l4proto {{ tcp, udp }} th dport 53 accept
    icmpv6 type {{ nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert }} accept
    ip daddr @host4 counter reject with icmpx type admin-prohibited comment "host"
    ip6 daddr @host6 counter reject with icmpx type admin-prohibited comment "host"
    oifname "lo" accept
    ip daddr @blocked4 counter reject with icmpx type admin-prohibited comment "blocked"
    ip6 daddr @blocked6 counter reject with icmpx type admin-prohibited comment "blocked"
  }}
}}
"""


# Runs as root of pasta's namespaces: the rules first, then the sandbox (bwrap) in a child namespace.
_APPLY = (
    'printf %s "$1" | nft -f - || { echo "internet: the firewall could not be set" >&2; exit 1; }; shift; exec "$@"'
)


def internet_argv(rules: str, *, as_namespace_root: bool) -> list[str]:
    """The programs in front of bwrap. `as_namespace_root`: the chain runs as root of a user
    namespace of ours (the overlay's). pasta maps its own uid to root of the namespace it makes,
    and mapping a parent's uid 0 takes CAP_SETFCAP, which pasta drops first: it starts as uid 1 of
    one more namespace between (the same host uid, no capabilities)."""
    argv = ["unshare", "--user", "--map-user=1", "--map-group=1", "--"] if as_namespace_root else []
    argv += [
        "pasta",
        "--config-net",
        "--foreground",  # a child of the sandbox's launch chain: killed with its group and cgroup
        "--quiet",
        "--log-file",
        "/dev/null",  # its messages would mix into a one-command sandbox's stderr
        "--no-map-gw",  # the gateway's address is not the host's loopback
        "--dns-forward",
        DNS_ADDRESS,
        "-t",
        "none",  # nothing from outside into the namespace
        "-u",
        "none",
        "-T",
        "none",  # nothing from the namespace's loopback to the host's
        "-U",
        "none",
    ]
    return [*argv, "--", "/bin/sh", "-c", _APPLY, "sh", rules]
