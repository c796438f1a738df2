"""The outbound guard for calls to systems under test (spec/target-protocol.md).

Only ``http`` and ``https``; the host must be on the operator's allowlist; and unless an
allowlist entry names it explicitly, an address that is loopback, private, link-local,
CGNAT, unique-local, IPv4-mapped onto one of those, or otherwise not globally routable
is refused. The check runs on the address the socket actually connects to, after DNS,
so rebinding tricks and decimal or octal spellings of an IP gain nothing.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Blocks that ``is_global`` already refuses are listed anyway, so the intent is explicit.
_ALWAYS_REFUSED_V4 = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]
_ALWAYS_REFUSED_V6 = [
    ipaddress.ip_network(n)
    for n in (
        "::/128",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "2001:db8::/32",
        "2002::/16",
        "2001::/32",
    )
]


class OutboundRefused(Exception):
    """A call that the guard does not allow; the message says why, for the check record."""


@dataclass(frozen=True)
class Allowlist:
    """Host names (exact, or ``*.example.com``) and IP networks the operator allows."""

    hostnames: frozenset[str]
    networks: tuple[IPNetwork, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowlist:
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            if entry.startswith("[") and entry.endswith("]"):
                entry = entry[1:-1]
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                names.add(entry)
        return cls(frozenset(names), tuple(networks))

    def __add__(self, other: Allowlist) -> Allowlist:
        return Allowlist(self.hostnames | other.hostnames, self.networks + other.networks)

    def host_allowed(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        literal = _ip_literal(host)
        if literal is not None:
            return any(literal in net for net in self.networks) or host in self.hostnames
        if host in self.hostnames:
            return True
        return any(name.startswith("*.") and host.endswith(name[1:]) for name in self.hostnames)

    def address_explicitly_allowed(self, address: IPAddress) -> bool:
        return any(address in net for net in self.networks)


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination, or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            inner = refusal_reason(mapped)
            return f"IPv4-mapped {inner}" if inner else None
        for net in _ALWAYS_REFUSED_V6:
            if address in net:
                return f"{address} is in the reserved block {net}"
    else:
        for net in _ALWAYS_REFUSED_V4:
            if address in net:
                return f"{address} is in the reserved block {net}"
    if not address.is_global:
        return f"{address} is not a globally routable address"
    return None


def check_url(url: str, allowlist: Allowlist) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL the guard lets through, before any address check."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise OutboundRefused(f"only http and https URLs are allowed, not {scheme or 'no scheme'!r}")
    if parts.username or parts.password:
        raise OutboundRefused("URLs with credentials are not allowed")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OutboundRefused("the URL has no host")
    try:
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"bad port in URL: {exc}") from exc
    if port == 0:
        raise OutboundRefused("port 0 is not a port a service listens on")
    port = port or (443 if scheme == "https" else 80)
    if not allowlist.host_allowed(host):
        raise OutboundRefused(f"host {host!r} is not on the target allowlist")
    return scheme, host, port


def connect_guarded(host: str, port: int, timeout: float, allowlist: Allowlist) -> socket.socket:
    """Resolve ``host`` and connect to the first permitted address, checking the peer too."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConnectionError(f"cannot resolve {host!r}: {exc.strerror}") from exc
    refusals: list[str] = []
    last_error: OSError | None = None
    for family, socktype, proto, _, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0].split("%")[0])
        reason = refusal_reason(address)
        if reason and not allowlist.address_explicitly_allowed(address):
            refusals.append(reason)
            continue
        sock = socket.socket(family, socktype, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            last_error = exc
            continue
        # What we are connected to is what counts, whatever the resolver said.
        peer = ipaddress.ip_address(sock.getpeername()[0].split("%")[0])
        reason = refusal_reason(peer)
        if reason and not allowlist.address_explicitly_allowed(peer):
            sock.close()
            refusals.append(reason)
            continue
        return sock
    if refusals and last_error is None:
        raise OutboundRefused(f"refused to connect to {host!r}: {'; '.join(sorted(set(refusals)))}")
    raise ConnectionError(f"cannot connect to {host}:{port}: {last_error or 'no usable address'}")
