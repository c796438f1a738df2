"""The outbound guard and the target client (spec/target-protocol.md, "How the app calls it").

No database and no traffic beyond loopback: every HTTP call goes to a real
``ThreadingHTTPServer`` on 127.0.0.1, and wherever a guard that let an address through
would connect somewhere else, the resolver and the socket class seen by
``cases.targets.outbound`` are replaced by fakes that only record what they were asked.
"""

from __future__ import annotations

import ipaddress
import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cases.targets import client, outbound
from cases.targets.client import BACKOFF_BASE, BACKOFF_CAP, STORED_BODY_CHARS, CallSettings, call_http, call_python
from cases.targets.outbound import Allowlist, OutboundRefused, check_url, connect_guarded, refusal_reason

LOCAL = Allowlist.parse(["127.0.0.1"])
PAYLOAD = {
    "question": "what are Northline's payment terms?",
    "retrieval": "normal",
    "seed": 17,
    "caseId": "northline-terms",
}
GOOD = {"answer": "Northline is on net 45 terms.", "citations": ["supply-agreement-northline-2026"]}


def settings(**overrides: Any) -> CallSettings:
    values: dict[str, Any] = {"timeout": 2.0, "retries": 3, "max_bytes": 1024 * 1024, "allowlist": LOCAL}
    return CallSettings(**(values | overrides))


class Sleeps(list):
    """An injected ``sleep`` that records the delays instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class UpperBound(random.Random):
    """An rng whose jitter always picks the top of the range, to see the backoff ceiling."""

    def uniform(self, a: float, b: float) -> float:
        return b


# --------------------------------------------------------------------------------------
# A real local HTTP server, scripted per test
# --------------------------------------------------------------------------------------

Action = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Seen:
    method: str
    path: str
    headers: Message
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection; a body may end at close

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        srv: ScriptedServer = self.server  # type: ignore[assignment]
        with srv.lock:
            srv.seen.append(Seen(self.command, self.path, self.headers, body))
            action = srv.script.pop(0) if len(srv.script) > 1 else srv.script[0]
        action(self)

    do_GET = do_POST


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.seen: list[Seen] = []
        self.script: list[Action] = [reply(200, GOOD)]
        self.stop = threading.Event()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, path: str = "/answer") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hanging up on a stalled or oversized answer is expected here


def reply(status: int, body: Any = b"", *, headers: tuple[tuple[str, str], ...] = (), length: bool = True) -> Action:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()

    def act(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        for name, value in headers:
            h.send_header(name, value)
        if length:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    return act


def chunked(data: bytes, size: int = 1000) -> Action:
    def act(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(data), size):
            piece = data[i : i + size]
            h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        h.wfile.write(b"0\r\n\r\n")

    return act


def stall(seconds: float) -> Action:
    """Say nothing at all for ``seconds`` (cut short when the test ends)."""

    def act(h: BaseHTTPRequestHandler) -> None:
        h.server.stop.wait(seconds)  # type: ignore[attr-defined]

    return act


def headers_then_stall(seconds: float) -> Action:
    def act(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        h.server.stop.wait(seconds)  # type: ignore[attr-defined]

    return act


def trickle_headers(lines: int, every: float) -> Action:
    """Send the status line, then one header line every ``every`` seconds, then a good body."""

    def act(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n")
        for i in range(lines):
            if h.server.stop.wait(every):  # type: ignore[attr-defined]
                return
            h.wfile.write(b"X-Slow-%d: yes\r\n" % i)
        data = json.dumps(GOOD).encode()
        h.wfile.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))

    return act


def trickle_body(every: float, pieces: int) -> Action:
    """Headers at once, then a good body split into ``pieces`` sent ``every`` seconds apart."""

    def act(h: BaseHTTPRequestHandler) -> None:
        data = json.dumps(GOOD).encode().ljust(pieces, b" ")
        h.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data))
        step = -(-len(data) // pieces)
        for i in range(0, len(data), step):
            if h.server.stop.wait(every):  # type: ignore[attr-defined]
                return
            h.wfile.write(data[i : i + step])

    return act


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.stop.set()
        srv.shutdown()
        srv.server_close()
        thread.join(5)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A real TCP listener on 127.0.0.1: a guard that let loopback through would reach it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    try:
        yield sock
    finally:
        sock.close()


def accepted_connections(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def closed_port() -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


# --------------------------------------------------------------------------------------
# The network as cases.targets.outbound sees it (nothing else in the process is affected)
#
# Every test runs with a stand-in for the ``socket`` module inside outbound.py: the
# resolver answers from a table, numeric spellings and "localhost" only (never DNS), and
# a socket may really connect only to this machine (loopback, or the unspecified address
# that Linux treats as local). A connect anywhere else is recorded and refused, so even a
# guard that let everything through could not send a packet off the machine.
# --------------------------------------------------------------------------------------

NUMERIC_HOST = re.compile(r"\A[0-9a-fA-FxX.:\[\]]+\Z")


def _info(ip: str, port: int) -> tuple[Any, ...]:
    if ipaddress.ip_address(ip).version == 6:
        return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (ip, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))


def _on_this_machine(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified or address in ipaddress.ip_network("0.0.0.0/8")


class LoopbackOnlySocket:
    """A real socket that can only connect to this machine; elsewhere it records and refuses."""

    def __init__(self, net: FakeNet, family: int, socktype: int, proto: int) -> None:
        self._net, self._args, self._timeout = net, (family, socktype, proto), None
        self._real: socket.socket | None = None

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout
        if self._real is not None:
            self._real.settimeout(timeout)

    def connect(self, sockaddr: tuple[Any, ...]) -> None:
        if not _on_this_machine(sockaddr[0]):
            self._net.blocked.append(sockaddr[0])
            raise ConnectionRefusedError(f"the test network does not reach {sockaddr[0]}")
        self._real = socket.socket(*self._args)
        self._real.settimeout(self._timeout)
        self._real.connect(sockaddr)

    def close(self) -> None:
        if self._real is not None:
            self._real.close()

    def __getattr__(self, name: str) -> Any:
        if self._real is None:
            raise OSError(f"socket not connected ({name})")
        return getattr(self._real, name)


class FakeSocket:
    """Records the connect and pretends it worked; never touches the network."""

    def __init__(self, net: FakeNet, family: int, socktype: int, proto: int) -> None:
        self.net, self.family, self.closed, self.address = net, family, False, None

    def settimeout(self, timeout: float | None) -> None:
        pass

    def connect(self, sockaddr: tuple[Any, ...]) -> None:
        self.address = sockaddr
        self.net.connected.append(sockaddr[0])

    def getpeername(self) -> tuple[Any, ...]:
        assert self.address is not None
        if self.net.peer is not None:
            return (self.net.peer, self.address[1])
        return self.address

    def close(self) -> None:
        self.closed = True


class FakeNet:
    """Stands in for the ``socket`` module inside ``cases.targets.outbound``.

    ``names`` maps host -> addresses the resolver returns. With ``fake_sockets`` a connect
    is only recorded (``connected``) and pretends to succeed, and ``peer`` overrides what
    the socket reports as its peer; otherwise sockets are ``LoopbackOnlySocket``.
    """

    def __init__(self) -> None:
        self.names: dict[str, list[str]] = {}
        self.lookups: list[str] = []
        self.connected: list[str] = []
        self.blocked: list[str] = []
        self.sockets: list[FakeSocket] = []
        self.peer: str | None = None
        self.fake_sockets = False

    def getaddrinfo(self, host: str, port: int, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        self.lookups.append(host)
        if host in self.names:
            return [_info(ip, port) for ip in self.names[host]]
        if host == "localhost" or NUMERIC_HOST.match(host):
            return socket.getaddrinfo(host, port, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def socket(self, family: int, socktype: int, proto: int = 0) -> Any:
        if not self.fake_sockets:
            return LoopbackOnlySocket(self, family, socktype, proto)
        sock = FakeSocket(self, family, socktype, proto)
        self.sockets.append(sock)
        return sock

    def __getattr__(self, name: str) -> Any:
        return getattr(socket, name)


@pytest.fixture(autouse=True)
def net(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNet]:
    """Installed for every test; after each, nothing may have tried to leave the machine."""
    fake = FakeNet()
    monkeypatch.setattr(outbound, "socket", fake)
    yield fake
    assert fake.blocked == [], f"a connection off this machine was attempted: {fake.blocked}"


@pytest.fixture
def fake_net(net: FakeNet) -> FakeNet:
    """Sockets that only record: for addresses that must never really be connected to."""
    net.fake_sockets = True
    return net


# --------------------------------------------------------------------------------------
# refusal_reason
# --------------------------------------------------------------------------------------

REFUSED = [
    pytest.param("127.0.0.1", id="loopback"),
    pytest.param("127.1.2.3", id="loopback-other"),
    pytest.param("::1", id="loopback-v6"),
    pytest.param("10.0.0.1", id="private-10"),
    pytest.param("10.255.255.254", id="private-10-top"),
    pytest.param("172.16.0.1", id="private-172.16"),
    pytest.param("172.31.255.254", id="private-172.31"),
    pytest.param("192.168.1.1", id="private-192.168"),
    pytest.param("169.254.169.254", id="cloud-metadata"),
    pytest.param("169.254.0.1", id="link-local"),
    pytest.param("fe80::1", id="link-local-v6"),
    pytest.param("100.64.0.1", id="cgnat"),
    pytest.param("100.127.255.254", id="cgnat-top"),
    pytest.param("fd00::1", id="ula"),
    pytest.param("fc00::1", id="ula-fc"),
    pytest.param("::ffff:127.0.0.1", id="mapped-loopback"),
    pytest.param("::ffff:10.0.0.1", id="mapped-private"),
    pytest.param("::ffff:169.254.169.254", id="mapped-metadata"),
    pytest.param("::ffff:0.0.0.0", id="mapped-unspecified"),
    pytest.param("0.0.0.0", id="unspecified"),
    pytest.param("0.1.2.3", id="this-network"),
    pytest.param("::", id="unspecified-v6"),
    pytest.param("224.0.0.1", id="multicast"),
    pytest.param("239.255.255.250", id="multicast-ssdp"),
    pytest.param("ff02::1", id="multicast-v6"),
    pytest.param("255.255.255.255", id="broadcast"),
    pytest.param("240.0.0.1", id="reserved-240"),
    pytest.param("192.0.2.1", id="test-net-1"),
    pytest.param("198.18.0.1", id="benchmarking"),
    pytest.param("192.0.0.8", id="ietf-protocol"),
    pytest.param("2001:db8::1", id="documentation-v6"),
    pytest.param("64:ff9b::a00:1", id="nat64-private"),
    pytest.param("2002:7f00:1::", id="6to4-loopback"),
    pytest.param("fec0::1", id="site-local-v6"),
]

PUBLIC = ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700::1", "2a00:1450:4001::1", "::ffff:93.184.216.34"]


@pytest.mark.parametrize("address", REFUSED)
def test_refusal_reason_refuses_every_reserved_form(address):
    reason = refusal_reason(ipaddress.ip_address(address))
    assert reason, f"{address} should be refused"
    assert isinstance(reason, str)


@pytest.mark.parametrize("address", ["::ffff:127.0.0.1", "::ffff:10.0.0.1"])
def test_refusal_reason_names_the_ipv4_inside_a_mapped_address(address):
    reason = refusal_reason(ipaddress.ip_address(address))
    assert reason is not None
    assert "IPv4-mapped" in reason
    assert address.removeprefix("::ffff:") in reason


@pytest.mark.parametrize("address", PUBLIC)
def test_refusal_reason_accepts_public_addresses(address):
    assert refusal_reason(ipaddress.ip_address(address)) is None


# --------------------------------------------------------------------------------------
# connect_guarded on every address form (fake sockets: nothing leaves the process)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("address", REFUSED)
def test_connect_guarded_refuses_reserved_addresses(fake_net, address):
    fake_net.names["target.example"] = [address]
    allow = Allowlist.parse(["target.example", "93.184.216.0/24"])
    with pytest.raises(OutboundRefused, match="refused to connect"):
        connect_guarded("target.example", 8080, 1.0, allow)
    assert fake_net.connected == []


@pytest.mark.parametrize("address", REFUSED)
def test_connect_guarded_allows_a_reserved_address_an_allowlist_network_contains(fake_net, address):
    fake_net.names["target.example"] = [address]
    sock = connect_guarded("target.example", 8080, 1.0, Allowlist.parse([address]))
    assert fake_net.connected == [address]
    assert not sock.closed


def test_connect_guarded_allowlist_network_unlocks_only_what_it_contains(fake_net):
    allow = Allowlist.parse(["10.0.0.0/8", "target.example"])
    fake_net.names["target.example"] = ["10.20.30.40"]
    connect_guarded("target.example", 80, 1.0, allow)
    fake_net.names["target.example"] = ["192.168.1.1"]
    with pytest.raises(OutboundRefused):
        connect_guarded("target.example", 80, 1.0, allow)
    fake_net.names["target.example"] = ["127.0.0.1"]
    with pytest.raises(OutboundRefused):
        connect_guarded("target.example", 80, 1.0, allow)
    assert fake_net.connected == ["10.20.30.40"]


def test_connect_guarded_hostname_entries_never_unlock_reserved_addresses(fake_net):
    fake_net.names["intranet.example"] = ["10.1.1.1"]
    allow = Allowlist.parse(["intranet.example", "*.example"])
    with pytest.raises(OutboundRefused, match=re.escape("10.1.1.1")):
        connect_guarded("intranet.example", 80, 1.0, allow)
    assert fake_net.connected == []


def test_connect_guarded_connects_to_a_public_address(fake_net):
    fake_net.names["public.example"] = ["93.184.216.34"]
    sock = connect_guarded("public.example", 443, 1.0, Allowlist.parse(["public.example"]))
    assert isinstance(sock, FakeSocket)
    assert fake_net.connected == ["93.184.216.34"]


def test_connect_guarded_skips_reserved_answers_and_uses_the_public_one(fake_net):
    fake_net.names["mixed.example"] = ["127.0.0.1", "169.254.169.254", "::1", "93.184.216.34"]
    connect_guarded("mixed.example", 80, 1.0, Allowlist.parse(["mixed.example"]))
    assert fake_net.connected == ["93.184.216.34"]


def test_connect_guarded_rechecks_the_peer_it_actually_reached(fake_net):
    """The resolver said public, but the connected socket is at loopback: refused, closed."""
    fake_net.names["sneaky.example"] = ["93.184.216.34"]
    fake_net.peer = "127.0.0.1"
    with pytest.raises(OutboundRefused, match=re.escape("127.0.0.1")):
        connect_guarded("sneaky.example", 80, 1.0, Allowlist.parse(["sneaky.example"]))
    assert len(fake_net.sockets) == 1
    assert fake_net.sockets[0].closed


def test_connect_guarded_peer_recheck_respects_an_allowlisted_network(fake_net):
    fake_net.names["sneaky.example"] = ["93.184.216.34"]
    fake_net.peer = "127.0.0.1"
    sock = connect_guarded("sneaky.example", 80, 1.0, Allowlist.parse(["127.0.0.1"]))
    assert not sock.closed


def test_connect_guarded_unresolvable_name_is_a_connection_error(fake_net):
    with pytest.raises(ConnectionError, match="cannot resolve") as info:
        connect_guarded("nowhere.invalid", 80, 1.0, Allowlist.parse(["nowhere.invalid"]))
    assert not isinstance(info.value, OutboundRefused)
    assert fake_net.connected == []


# --------------------------------------------------------------------------------------
# Real loopback: spellings of 127.0.0.1, localhost, rebinding
# --------------------------------------------------------------------------------------

SPELLINGS = ["2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7f000001", "0177.1", "0"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_numeric_spellings_of_loopback_are_refused(listener, spelling):
    port = listener.getsockname()[1]
    allow = Allowlist.parse([spelling])
    # The hostname allowlist lets the spelling through the URL check...
    assert check_url(f"http://{spelling}:{port}/", allow) == ("http", spelling, port)
    # ...but it resolves to loopback, which no network entry allows.
    with pytest.raises(OutboundRefused):
        connect_guarded(spelling, port, 1.0, allow)
    assert accepted_connections(listener) == 0


def test_a_spelling_that_is_not_on_the_allowlist_is_not_the_ip_it_spells():
    assert not LOCAL.host_allowed("2130706433")
    assert not LOCAL.host_allowed("127.1")
    assert not Allowlist.parse(["2130706433"]).host_allowed("127.0.0.1")


def test_the_listener_is_reachable_when_loopback_is_allowlisted(listener):
    """The control for the spelling tests: a bypass really would have connected."""
    port = listener.getsockname()[1]
    sock = connect_guarded("2130706433", port, 1.0, Allowlist.parse(["127.0.0.0/8"]))
    try:
        assert sock.getpeername() == ("127.0.0.1", port)
    finally:
        sock.close()
    deadline = time.monotonic() + 2
    while accepted_connections(listener) == 0:
        assert time.monotonic() < deadline, "the listener never saw the allowed connection"
        time.sleep(0.01)


def test_localhost_on_the_hostname_allowlist_is_still_refused(listener):
    port = listener.getsockname()[1]
    with pytest.raises(OutboundRefused):
        connect_guarded("localhost", port, 1.0, Allowlist.parse(["localhost"]))
    assert accepted_connections(listener) == 0


def test_dns_rebinding_to_loopback_is_refused(net, listener):
    port = listener.getsockname()[1]
    net.names["rebind.example"] = ["127.0.0.1"]
    allow = Allowlist.parse(["rebind.example"])
    assert check_url(f"http://rebind.example:{port}/", allow) == ("http", "rebind.example", port)
    with pytest.raises(OutboundRefused, match=re.escape("127.0.0.1")):
        connect_guarded("rebind.example", port, 1.0, allow)
    assert net.lookups == ["rebind.example"]
    assert accepted_connections(listener) == 0


@pytest.mark.parametrize("address", ["127.0.0.1", "::ffff:127.0.0.1", "169.254.169.254", "10.0.0.1", "0.0.0.0"])
def test_call_http_refuses_a_hostname_that_resolves_to_a_reserved_address(net, server, address):
    net.names["rebind.example"] = [address]
    sleeps = Sleeps()
    result = call_http(
        f"http://rebind.example:{server.port}/answer",
        PAYLOAD,
        "run-1/normal",
        settings(allowlist=Allowlist.parse(["rebind.example"])),
        sleep=sleeps,
    )
    assert result.response is None
    assert result.error.startswith("refused by the outbound guard")
    assert len(result.attempts) == 1  # a refusal is final, not retried
    assert sleeps == []
    assert server.seen == []


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f.1", "127.1"])
def test_call_http_refuses_numeric_spellings_end_to_end(server, spelling):
    result = call_http(
        f"http://{spelling}:{server.port}/answer",
        PAYLOAD,
        "k",
        settings(allowlist=Allowlist.parse([spelling])),
        sleep=Sleeps(),
    )
    assert result.error.startswith("refused by the outbound guard")
    assert server.seen == []


# --------------------------------------------------------------------------------------
# Allowlist and check_url
# --------------------------------------------------------------------------------------


def test_allowlist_parse_normalises_entries():
    allow = Allowlist.parse([" API.Example.COM. ", "", "   ", "[::1]", "10.1.2.3/8", "*.Corp.Example", "192.0.2.7"])
    assert allow.hostnames == frozenset({"api.example.com", "*.corp.example"})
    assert set(allow.networks) == {
        ipaddress.ip_network("::1/128"),
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("192.0.2.7/32"),
    }


def test_allowlists_combine_with_plus():
    combined = Allowlist.parse(["a.example"]) + Allowlist.parse(["10.0.0.0/8", "*.b.example"])
    assert combined.host_allowed("a.example")
    assert combined.host_allowed("x.b.example")
    assert combined.host_allowed("10.9.8.7")
    assert not combined.host_allowed("c.example")
    assert not combined.host_allowed("11.0.0.1")


def test_the_empty_allowlist_allows_nothing():
    empty = CallSettings().allowlist
    for host in ("example.com", "127.0.0.1", "93.184.216.34", "::1", "localhost"):
        assert not empty.host_allowed(host)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("api.example.com", True),
        ("a.b.example.com", True),
        ("API.EXAMPLE.COM", True),
        ("api.example.com.", True),
        ("example.com", False),
        ("evilexample.com", False),
        ("api.example.com.evil.net", False),
        ("example.com.evil.net", False),
        ("api.example.co", False),
        ("exact.example.org", True),
        ("sub.exact.example.org", False),
    ],
)
def test_host_allowed_exact_and_wildcard(host, allowed):
    allow = Allowlist.parse(["*.example.com", "exact.example.org"])
    assert allow.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("10.0.0.1", True),
        ("10.255.255.255", True),
        ("11.0.0.1", False),
        ("2001:db8::5", True),
        ("[2001:db8::5]", True),
        ("2001:db9::5", False),
        ("127.0.0.1", False),
    ],
)
def test_host_allowed_ip_literals_against_networks(host, allowed):
    allow = Allowlist.parse(["10.0.0.0/8", "2001:db8::/32", "*.0.0.1"])
    assert allow.host_allowed(host) is allowed


@pytest.mark.parametrize(
    "url",
    [
        "ftp://api.example.com/answer",
        "file:///etc/passwd",
        "file://api.example.com/etc/passwd",
        "gopher://api.example.com:70/_POST",
        "javascript:alert(1)",
        "data:text/plain,hello",
        "ws://api.example.com/",
        "dict://api.example.com:11211/stat",
        "//api.example.com/answer",
        "api.example.com/answer",
    ],
)
def test_check_url_only_http_and_https(url):
    with pytest.raises(OutboundRefused, match="only http and https"):
        check_url(url, Allowlist.parse(["api.example.com"]))


@pytest.mark.parametrize(
    "url",
    [
        "http://user@api.example.com/",
        "http://user:secret@api.example.com/",
        "https://:secret@api.example.com/",
        "http://api.example.com@api.example.com/",
    ],
)
def test_check_url_refuses_credentials(url):
    with pytest.raises(OutboundRefused, match="credentials"):
        check_url(url, Allowlist.parse(["api.example.com"]))


@pytest.mark.parametrize("url", ["http:///answer", "https://", "http://:8080/answer"])
def test_check_url_needs_a_host(url):
    with pytest.raises(OutboundRefused, match="no host"):
        check_url(url, Allowlist.parse(["api.example.com"]))


@pytest.mark.parametrize(
    "url",
    [
        "http://other.example.com/",
        "http://example.com/",
        "http://127.0.0.1/",
        "http://localhost/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://api.example.com.evil.net/",
    ],
)
def test_check_url_refuses_hosts_not_on_the_allowlist(url):
    with pytest.raises(OutboundRefused, match="not on the target allowlist"):
        check_url(url, Allowlist.parse(["api.example.com", "*.svc.example.com"]))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://api.example.com/answer", ("http", "api.example.com", 80)),
        ("https://api.example.com/answer", ("https", "api.example.com", 443)),
        ("HTTPS://API.Example.com:8443/x?y=1", ("https", "api.example.com", 8443)),
        ("http://api.example.com.:8080/", ("http", "api.example.com", 8080)),
        ("http://rag.svc.example.com:9000/", ("http", "rag.svc.example.com", 9000)),
        ("http://10.0.0.5:8000/answer", ("http", "10.0.0.5", 8000)),
        ("http://[2001:db8::1]:8080/answer", ("http", "2001:db8::1", 8080)),
        ("https://[2001:db8::1]/answer", ("https", "2001:db8::1", 443)),
    ],
)
def test_check_url_accepts_allowed_hosts_with_ports(url, expected):
    allow = Allowlist.parse(["api.example.com", "*.svc.example.com", "10.0.0.0/8", "2001:db8::/32"])
    assert check_url(url, allow) == expected


@pytest.mark.parametrize(
    "url", ["http://api.example.com:99999/", "http://api.example.com:port/", "http://api.example.com:-1/"]
)
def test_check_url_refuses_bad_ports(url):
    with pytest.raises(OutboundRefused, match="bad port"):
        check_url(url, Allowlist.parse(["api.example.com"]))


def test_check_url_does_not_resolve_anything(fake_net):
    check_url("http://api.example.com/", Allowlist.parse(["api.example.com"]))
    assert fake_net.lookups == []


# --------------------------------------------------------------------------------------
# call_http against a real local server
# --------------------------------------------------------------------------------------


def test_success_and_the_request_on_the_wire(server):
    result = call_http(server.url("/v1/answer?tenant=a"), PAYLOAD, "check-42/disabled", settings(), sleep=Sleeps())
    assert result.response == GOOD
    assert result.error is None
    assert len(result.attempts) == 1
    attempt = result.attempts[0]
    assert attempt.number == 1
    assert attempt.status == 200
    assert attempt.error == ""
    assert json.loads(attempt.body) == GOOD
    assert attempt.duration_ms >= 0
    assert set(attempt.to_dict()) == {"number", "startedAt", "durationMs", "status", "body", "error"}

    [seen] = server.seen
    assert seen.method == "POST"
    assert seen.path == "/v1/answer?tenant=a"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.headers["Idempotency-Key"] == "check-42/disabled"
    assert json.loads(seen.body) == PAYLOAD
    assert set(json.loads(seen.body)) == {"question", "retrieval", "seed", "caseId"}

    assert result.request["method"] == "POST"
    assert result.request["url"] == server.url("/v1/answer?tenant=a")
    assert result.request["headers"]["Idempotency-Key"] == "check-42/disabled"
    assert result.request["body"] == PAYLOAD


def test_non_ascii_payload_is_sent_as_utf8_json(server):
    payload = PAYLOAD | {"question": "Zahlungsziel für Nordlicht — 45 Tage? 北"}
    result = call_http(server.url(), payload, "k", settings(), sleep=Sleeps())
    assert result.response == GOOD
    assert json.loads(server.seen[0].body.decode("utf-8")) == payload


def test_full_response_object_is_accepted(server):
    full = {
        "answer": "Northline is on net 45 terms under the 2026 supply agreement.",
        "citations": ["supply-agreement-northline-2026"],
        "toolCalls": [{"name": "lookup_invoices", "arguments": {"customer": "northline"}}],
        "steps": 2,
        "abstained": False,
        "askedClarification": False,
        "requestedConfirmation": False,
        "retrieved": ["supply-agreement-northline-2026", "supply-agreement-northline-2024"],
        "somethingExtra": {"unknown keys": "are allowed"},
    }
    server.script = [reply(200, full)]
    assert call_http(server.url(), PAYLOAD, "k", settings(), sleep=Sleeps()).response == full


def test_empty_answer_is_a_valid_answer(server):
    server.script = [reply(200, {"answer": ""})]
    assert call_http(server.url(), PAYLOAD, "k", settings(), sleep=Sleeps()).response == {"answer": ""}


def test_503_503_200_retries_with_backoff_and_jitter(server):
    server.script = [reply(503, b"busy"), reply(503, b"busy"), reply(200, GOOD)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "run-7/normal", settings(), sleep=sleeps, rng=random.Random(3))
    assert result.response == GOOD
    assert result.error is None
    assert [a.number for a in result.attempts] == [1, 2, 3]
    assert [a.status for a in result.attempts] == [503, 503, 200]
    assert [a.error for a in result.attempts] == ["HTTP 503", "HTTP 503", ""]
    assert result.attempts[0].body == "busy"
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= BACKOFF_BASE
    assert 0 <= sleeps[1] <= BACKOFF_BASE * 2
    # Every retry carries the same idempotency key and the same body.
    assert len(server.seen) == 3
    assert {s.headers["Idempotency-Key"] for s in server.seen} == {"run-7/normal"}
    assert len({s.body for s in server.seen}) == 1


def test_backoff_grows_exponentially_up_to_the_cap(server):
    server.script = [reply(500)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(retries=6), sleep=sleeps, rng=UpperBound())
    assert len(result.attempts) == 7
    assert sleeps == [0.5, 1.0, 2.0, 4.0, BACKOFF_CAP, BACKOFF_CAP]


def test_jitter_is_full_jitter_drawn_from_the_rng(server):
    server.script = [reply(502)]
    sleeps = Sleeps()
    call_http(server.url(), PAYLOAD, "k", settings(retries=3), sleep=sleeps, rng=random.Random(11))
    expected_rng = random.Random(11)
    assert sleeps == [expected_rng.uniform(0, ceiling) for ceiling in (0.5, 1.0, 2.0)]


def test_429_is_retried(server):
    server.script = [reply(429, b"slow down", headers=(("Retry-After", "1"),)), reply(200, GOOD)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(), sleep=sleeps)
    assert result.response == GOOD
    assert [a.status for a in result.attempts] == [429, 200]
    assert result.attempts[0].error == "HTTP 429"
    assert len(sleeps) == 1
    assert len(server.seen) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 409, 413, 422])
def test_4xx_other_than_429_is_not_retried(server, status):
    server.script = [reply(status, {"detail": "no"}), reply(200, GOOD)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(), sleep=sleeps)
    assert result.response is None
    assert result.error == f"HTTP {status}"
    assert len(result.attempts) == 1
    assert result.attempts[0].status == status
    assert json.loads(result.attempts[0].body) == {"detail": "no"}
    assert sleeps == []
    assert len(server.seen) == 1


@pytest.mark.parametrize("status", [201, 202, 204])
def test_other_2xx_statuses_are_failures(server, status):
    server.script = [reply(status, GOOD if status != 204 else b"", length=status != 204)]
    result = call_http(server.url(), PAYLOAD, "k", settings(), sleep=Sleeps())
    assert result.response is None
    assert result.error == f"HTTP {status}"
    assert len(result.attempts) == 1


def test_500_every_time_gives_up_after_the_retries(server):
    server.script = [reply(500, b"boom")]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(retries=3), sleep=sleeps)
    assert result.response is None
    assert result.error == "HTTP 500"
    assert [a.number for a in result.attempts] == [1, 2, 3, 4]
    assert all(a.status == 500 and a.body == "boom" for a in result.attempts)
    assert len(sleeps) == 3
    assert len(server.seen) == 4


def test_retries_zero_means_one_attempt(server):
    server.script = [reply(503)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(retries=0), sleep=sleeps)
    assert len(result.attempts) == 1
    assert sleeps == []


def test_no_answer_within_the_timeout_is_retried_and_bounded(server):
    server.script = [stall(10)]
    sleeps = Sleeps()
    timeout, retries = 0.3, 2
    started = time.monotonic()
    result = call_http(server.url(), PAYLOAD, "k", settings(timeout=timeout, retries=retries), sleep=sleeps)
    elapsed = time.monotonic() - started
    assert result.response is None
    assert "no complete answer within 0.3 s" in result.error
    assert len(result.attempts) == retries + 1
    assert len(sleeps) == retries
    assert all("no complete answer within" in a.error for a in result.attempts)
    assert all(200 <= a.duration_ms <= 1500 for a in result.attempts)
    assert elapsed < timeout * (retries + 1) + 1.5
    assert len(server.seen) == retries + 1


def test_a_body_that_stalls_after_the_headers_times_out(server):
    server.script = [headers_then_stall(10)]
    started = time.monotonic()
    result = call_http(server.url(), PAYLOAD, "k", settings(timeout=0.3, retries=0), sleep=Sleeps())
    assert "no complete answer within" in result.error
    assert time.monotonic() - started < 1.5


def test_total_timeout_holds_against_trickled_headers(server):
    server.script = [trickle_headers(lines=8, every=0.25)]  # 2 s of headers
    started = time.monotonic()
    result = call_http(server.url(), PAYLOAD, "k", settings(timeout=0.5, retries=0), sleep=Sleeps())
    elapsed = time.monotonic() - started
    assert result.response is None
    assert elapsed < 0.5 + 0.8, f"one attempt with a 0.5 s timeout took {elapsed:.2f} s"


def test_total_timeout_holds_against_a_trickled_body(server):
    server.script = [trickle_body(every=0.1, pieces=20)]  # 2 s of body
    started = time.monotonic()
    result = call_http(server.url(), PAYLOAD, "k", settings(timeout=0.5, retries=0), sleep=Sleeps())
    elapsed = time.monotonic() - started
    assert result.response is None
    assert elapsed < 0.5 + 0.8, f"one attempt with a 0.5 s timeout took {elapsed:.2f} s"


def test_connection_refused_is_retried(server):
    sleeps = Sleeps()
    result = call_http(f"http://127.0.0.1:{closed_port()}/answer", PAYLOAD, "k", settings(retries=2), sleep=sleeps)
    assert result.response is None
    assert result.error.startswith("connection failed")
    assert len(result.attempts) == 3
    assert all(a.status is None and a.error.startswith("connection failed") for a in result.attempts)
    assert len(sleeps) == 2


def test_connection_closed_without_an_answer_is_retried(server):
    def hang_up(h: BaseHTTPRequestHandler) -> None:
        h.close_connection = True

    server.script = [hang_up, reply(200, GOOD)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(), sleep=sleeps)
    assert result.response == GOOD
    assert result.attempts[0].error.startswith("connection failed")
    assert len(result.attempts) == 2
    assert len(sleeps) == 1


def _padded(size: int) -> bytes:
    """A valid response body of exactly ``size`` bytes."""
    data = json.dumps({"answer": "x", "pad": ""}).encode()
    return data[:-2] + b"y" * (size - len(data)) + data[-2:]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda data: reply(200, data), id="content-length"),
        pytest.param(lambda data: reply(200, data, length=False), id="until-close"),
        pytest.param(lambda data: chunked(data), id="chunked"),
    ],
)
def test_body_over_the_cap_is_refused_and_not_retried(server, make):
    cap = 4096
    server.script = [make(_padded(cap + 1)), reply(200, GOOD)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(max_bytes=cap), sleep=sleeps)
    assert result.response is None
    assert "over the cap" in result.error
    assert "4,096" in result.error
    assert len(result.attempts) == 1
    assert result.attempts[0].status == 200
    assert sleeps == []
    assert len(server.seen) == 1


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda data: reply(200, data), id="content-length"),
        pytest.param(lambda data: reply(200, data, length=False), id="until-close"),
        pytest.param(lambda data: chunked(data), id="chunked"),
    ],
)
def test_body_exactly_at_the_cap_is_accepted(server, make):
    cap = 4096
    body = _padded(cap)
    assert len(body) == cap
    server.script = [make(body)]
    result = call_http(server.url(), PAYLOAD, "k", settings(max_bytes=cap), sleep=Sleeps())
    assert result.response == json.loads(body)


def test_a_huge_body_is_cut_off_not_read_to_the_end(server):
    cap = 64 * 1024

    def firehose(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
        block = b" " * 65536
        for _ in range(32 * 16):  # 32 MiB if nobody hangs up
            if h.server.stop.is_set():  # type: ignore[attr-defined]
                return
            h.wfile.write(block)

    server.script = [firehose]
    started = time.monotonic()
    result = call_http(server.url(), PAYLOAD, "k", settings(max_bytes=cap), sleep=Sleeps())
    assert "over the cap" in result.error
    assert time.monotonic() - started < 3


def test_stored_body_is_truncated(server):
    big = b"e" * (STORED_BODY_CHARS * 3)
    server.script = [reply(503, big)]
    result = call_http(server.url(), PAYLOAD, "k", settings(retries=0), sleep=Sleeps())
    assert result.error == "HTTP 503"
    assert result.attempts[0].body == "e" * STORED_BODY_CHARS


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param(b"<html>oops</html>", "not JSON", id="html"),
        pytest.param(b"", "not JSON", id="empty"),
        pytest.param(b'{"answer": "x"', "not JSON", id="truncated"),
        pytest.param(b"\xff\xfe{}", "not JSON", id="bad-utf8"),
        pytest.param(b'[{"answer": "x"}]', "not an object (list)", id="array"),
        pytest.param(b'"just a string"', "not an object (str)", id="string"),
        pytest.param(b"null", "not an object", id="null"),
        pytest.param(b"42", "not an object", id="number"),
        pytest.param(b'{"citations": []}', "response.answer", id="no-answer"),
        pytest.param(b'{"answer": 42}', "response.answer", id="answer-number"),
        pytest.param(b'{"answer": null}', "response.answer", id="answer-null"),
        pytest.param(b'{"answer": ["a"]}', "response.answer", id="answer-list"),
        pytest.param(b'{"answer": "x", "citations": "doc-1"}', "response.citations", id="citations-string"),
        pytest.param(b'{"answer": "x", "citations": [1]}', "response.citations[0]", id="citation-number"),
        pytest.param(b'{"answer": "x", "toolCalls": {}}', "response.toolCalls", id="toolcalls-object"),
        pytest.param(b'{"answer": "x", "toolCalls": [{}]}', "response.toolCalls[0].name", id="toolcall-no-name"),
        pytest.param(b'{"answer": "x", "steps": "two"}', "response.steps", id="steps-string"),
        pytest.param(b'{"answer": "x", "steps": -1}', "response.steps", id="steps-negative"),
        pytest.param(b'{"answer": "x", "abstained": "no"}', "response.abstained", id="abstained-string"),
        pytest.param(b'{"answer": "x", "retrieved": "doc"}', "response.retrieved", id="retrieved-string"),
    ],
)
def test_malformed_200_is_a_failed_attempt_not_retried(server, body, fragment):
    server.script = [reply(200, body), reply(200, GOOD)]
    sleeps = Sleeps()
    result = call_http(server.url(), PAYLOAD, "k", settings(), sleep=sleeps)
    assert result.response is None
    assert fragment in result.error
    assert len(result.attempts) == 1
    assert result.attempts[0].status == 200
    assert result.attempts[0].body == body.decode("utf-8", errors="replace")
    assert sleeps == []
    assert len(server.seen) == 1


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirects_are_not_followed(server, monkeypatch, status):
    hosts: list[str] = []
    real_connect = client.connect_guarded

    def spy(host: str, port: int, timeout: float, allowlist: Allowlist) -> socket.socket:
        hosts.append(host)
        return real_connect(host, port, timeout, allowlist)

    monkeypatch.setattr(client, "connect_guarded", spy)
    target = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    server.script = [reply(status, b"", headers=(("Location", target),))]
    sleeps = Sleeps()
    allow = LOCAL + Allowlist.parse(["169.254.169.254"])  # even an allowlisted target is not followed
    result = call_http(server.url(), PAYLOAD, "k", settings(allowlist=allow), sleep=sleeps)
    assert result.response is None
    assert "not followed" in result.error
    assert f"HTTP {status}" in result.error
    assert "169.254.169.254" in result.error
    assert len(result.attempts) == 1
    assert result.attempts[0].status == status
    assert sleeps == []
    assert len(server.seen) == 1
    assert hosts == ["127.0.0.1"]


def test_redirect_to_the_same_server_is_not_followed_either(server):
    server.script = [reply(302, b"", headers=(("Location", "/elsewhere"),)), reply(200, GOOD)]
    result = call_http(server.url(), PAYLOAD, "k", settings(), sleep=Sleeps())
    assert "not followed" in result.error
    assert [s.path for s in server.seen] == ["/answer"]


def test_loopback_url_not_on_the_allowlist_is_refused_before_any_request(server):
    sleeps = Sleeps()
    result = call_http(
        server.url(), PAYLOAD, "k", settings(allowlist=Allowlist.parse(["api.example.com"])), sleep=sleeps
    )
    assert result.response is None
    assert result.error.startswith("refused by the outbound guard")
    assert "not on the target allowlist" in result.error
    assert len(result.attempts) == 1
    assert result.attempts[0].status is None
    assert sleeps == []
    assert server.seen == []


def test_default_settings_refuse_everything(server):
    result = call_http(server.url(), PAYLOAD, "k", CallSettings(), sleep=Sleeps())
    assert result.error.startswith("refused by the outbound guard")
    assert server.seen == []


def test_localhost_name_is_refused_even_when_the_name_is_allowlisted(server):
    result = call_http(
        f"http://localhost:{server.port}/answer",
        PAYLOAD,
        "k",
        settings(allowlist=Allowlist.parse(["localhost"])),
        sleep=Sleeps(),
    )
    assert result.error.startswith("refused by the outbound guard")
    assert server.seen == []


def test_localhost_name_works_when_its_address_is_allowlisted(server):
    allow = Allowlist.parse(["localhost", "127.0.0.1", "::1"])
    result = call_http(
        f"http://localhost:{server.port}/answer", PAYLOAD, "k", settings(allowlist=allow), sleep=Sleeps()
    )
    assert result.response == GOOD
    assert len(server.seen) == 1


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1:{port}/answer",
        "file:///etc/passwd",
        "http://user:pw@127.0.0.1:{port}/answer",
    ],
)
def test_bad_urls_are_refused_before_any_request(server, url):
    result = call_http(url.format(port=server.port), PAYLOAD, "k", settings(), sleep=Sleeps())
    assert result.error.startswith("refused by the outbound guard")
    assert len(result.attempts) == 1
    assert server.seen == []


def test_an_invalid_url_is_not_retried_as_a_connection_error(server):
    sleeps = Sleeps()
    result = call_http(server.url("/a b"), PAYLOAD, "k", settings(), sleep=sleeps)
    assert server.seen == []
    assert result.response is None
    assert len(result.attempts) == 1
    assert sleeps == []


def test_https_to_a_plain_http_server_fails_without_a_plaintext_request(server):
    result = call_http(
        f"https://127.0.0.1:{server.port}/answer", PAYLOAD, "k", settings(retries=0, timeout=1.0), sleep=Sleeps()
    )
    assert result.response is None
    assert result.error.startswith("connection failed")
    assert all(s.method != "POST" or not s.body.startswith(b"{") for s in server.seen)


def test_concurrent_calls_are_independent(server):
    server.script = [reply(200, GOOD)]
    results: list[Any] = []

    def run(i: int) -> None:
        results.append(call_http(server.url(), PAYLOAD, f"k-{i}", settings(), sleep=Sleeps()))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(results) == 8
    assert all(r.response == GOOD for r in results)
    assert sorted(s.headers["Idempotency-Key"] for s in server.seen) == sorted(f"k-{i}" for i in range(8))


# --------------------------------------------------------------------------------------
# call_python
# --------------------------------------------------------------------------------------


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets callables that block until the test ends finish at teardown."""
    event = threading.Event()
    yield event
    event.set()


def test_call_python_success():
    calls: list[tuple[Any, ...]] = []

    def fn(question: str, retrieval: str, seed: int) -> dict[str, Any]:
        calls.append((question, retrieval, seed))
        return dict(GOOD)

    sleeps = Sleeps()
    result = call_python(fn, PAYLOAD, settings(), label="myrag.api:answer", sleep=sleeps)
    assert result.response == GOOD
    assert result.error is None
    assert calls == [(PAYLOAD["question"], PAYLOAD["retrieval"], PAYLOAD["seed"])]
    assert result.request == {
        "callable": "myrag.api:answer",
        "args": [PAYLOAD["question"], PAYLOAD["retrieval"], PAYLOAD["seed"]],
    }
    assert len(result.attempts) == 1
    assert result.attempts[0].status == 200
    assert json.loads(result.attempts[0].body) == GOOD
    assert sleeps == []


def test_call_python_exception_is_retried_then_reported():
    calls = []

    def fn(question: str, retrieval: str, seed: int) -> dict[str, Any]:
        calls.append(1)
        raise ValueError("index not loaded")

    sleeps = Sleeps()
    result = call_python(fn, PAYLOAD, settings(retries=2), label="x", sleep=sleeps, rng=UpperBound())
    assert result.response is None
    assert "ValueError" in result.error
    assert "index not loaded" in result.error
    assert result.error == "the callable raised ValueError: index not loaded"
    assert len(result.attempts) == 3
    assert len(calls) == 3
    assert sleeps == [0.5, 1.0]


def test_call_python_flaky_callable_succeeds_on_retry():
    calls = []

    def fn(question: str, retrieval: str, seed: int) -> dict[str, Any]:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError("upstream reset")
        return {"answer": "ok"}

    sleeps = Sleeps()
    result = call_python(fn, PAYLOAD, settings(), label="x", sleep=sleeps)
    assert result.response == {"answer": "ok"}
    assert [a.error for a in result.attempts][:2] == ["the callable raised ConnectionResetError: upstream reset"] * 2
    assert len(sleeps) == 2


def test_call_python_timeout(release):
    def fn(question: str, retrieval: str, seed: int) -> dict[str, Any]:
        release.wait(10)
        return dict(GOOD)

    sleeps = Sleeps()
    started = time.monotonic()
    result = call_python(fn, PAYLOAD, settings(timeout=0.2, retries=1), label="x", sleep=sleeps)
    elapsed = time.monotonic() - started
    assert result.response is None
    assert "no complete answer within 0.2 s" in result.error
    assert len(result.attempts) == 2
    assert len(sleeps) == 1
    assert 0.35 <= elapsed < 0.4 + 1.0


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        pytest.param(["answer"], "not an object (list)", id="list"),
        pytest.param("the answer", "not an object (str)", id="str"),
        pytest.param(None, "not an object", id="none"),
        pytest.param(42, "not an object", id="int"),
        pytest.param({"text": "no answer key"}, "response.answer", id="no-answer"),
        pytest.param({"answer": 1}, "response.answer", id="answer-int"),
        pytest.param({"answer": "x", "citations": "doc"}, "response.citations", id="citations-str"),
    ],
)
def test_call_python_result_must_be_a_valid_response(value, fragment):
    calls = []

    def fn(question: str, retrieval: str, seed: int) -> Any:
        calls.append(1)
        return value

    sleeps = Sleeps()
    result = call_python(fn, PAYLOAD, settings(), label="x", sleep=sleeps)
    assert result.response is None
    assert fragment in result.error
    assert len(result.attempts) == 1
    assert len(calls) == 1
    assert sleeps == []


def test_call_python_result_over_the_cap():
    def fn(question: str, retrieval: str, seed: int) -> dict[str, Any]:
        return {"answer": "x" * 5000}

    result = call_python(fn, PAYLOAD, settings(max_bytes=1000), label="x", sleep=Sleeps())
    assert "over the cap" in result.error
    assert len(result.attempts) == 1


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_call_python_system_exit_is_a_failed_attempt_not_a_crash():
    def fn(question: str, retrieval: str, seed: int) -> dict[str, Any]:
        raise SystemExit(3)

    result = call_python(fn, PAYLOAD, settings(retries=0), label="x", sleep=Sleeps())
    assert result.response is None
    assert result.error


def test_call_python_unencodable_result_is_a_failed_attempt_not_a_crash():
    def fn(question: str, retrieval: str, seed: int) -> dict[str, Any]:
        d: dict[str, Any] = {"answer": "x"}
        d["self"] = d
        return d

    result = call_python(fn, PAYLOAD, settings(retries=0), label="x", sleep=Sleeps())
    assert result.response is None
    assert result.error
