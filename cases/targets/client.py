"""Calling a system under test: HTTP (the protocol), a Python callable, or the demo.

Every attempt is recorded (request, truncated raw response, status, timing) so a
reviewer can see exactly what the system said. Timeouts, connection errors, 5xx and 429
are retried with exponential backoff and full jitter; anything else fails at once.
Redirects are never followed, bodies over the size cap are refused, and every
connection goes through the outbound guard.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib
import json
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from cases.targets.outbound import Allowlist, OutboundRefused, check_url, connect_guarded
from cases.validation import validate_response

STORED_BODY_CHARS = 16 * 1024
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
USER_AGENT = "reviewapp-discrimination-check/1"


@dataclass
class Attempt:
    number: int
    started_at: float
    duration_ms: int
    status: int | None = None
    body: str = ""
    error: str = ""
    retryable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "startedAt": self.started_at,
            "durationMs": self.duration_ms,
            "status": self.status,
            "body": self.body,
            "error": self.error,
        }


@dataclass
class CallResult:
    request: dict[str, Any]
    attempts: list[Attempt] = field(default_factory=list)
    response: dict[str, Any] | None = None

    @property
    def error(self) -> str | None:
        if self.response is not None:
            return None
        return self.attempts[-1].error if self.attempts else "not attempted"


@dataclass(frozen=True)
class CallSettings:
    timeout: float = 30.0
    retries: int = 3
    max_bytes: int = 1024 * 1024
    allowlist: Allowlist = field(default_factory=lambda: Allowlist(frozenset(), ()))


class _Failed(Exception):
    def __init__(self, message: str, *, retryable: bool, status: int | None = None, body: str = ""):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.body = body


def _parse_response(raw: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Failed(f"the body is not JSON ({exc})", retryable=False) from exc
    if not isinstance(obj, dict):
        raise _Failed(f"the body is JSON but not an object ({type(obj).__name__})", retryable=False)
    problems = validate_response(obj, "response")
    if problems:
        raise _Failed("the response is malformed: " + "; ".join(str(p) for p in problems[:5]), retryable=False)
    return obj


class _GuardedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, *, timeout: float, allowlist: Allowlist):
        super().__init__(host, port, timeout=timeout)
        self._allowlist = allowlist

    def connect(self) -> None:
        self.sock = connect_guarded(self.host, self.port, self.timeout, self._allowlist)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Kept after http.client hands the socket to the response and forgets it.
        self.guarded_sock = self.sock


class _GuardedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, *, timeout: float, allowlist: Allowlist):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._allowlist = allowlist

    def connect(self) -> None:
        sock = connect_guarded(self.host, self.port, self.timeout, self._allowlist)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
        self.guarded_sock = self.sock


def _http_attempt(url: str, body: bytes, headers: dict[str, str], settings: CallSettings) -> tuple[int, bytes]:
    scheme, host, port = check_url(url, settings.allowlist)
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    deadline = time.monotonic() + settings.timeout
    cls = _GuardedHTTPSConnection if scheme == "https" else _GuardedHTTPConnection
    conn = cls(host, port, timeout=settings.timeout, allowlist=settings.allowlist)

    def cut_off() -> None:
        # The timeout is for the whole answer: a server trickling bytes, each within the
        # socket timeout, is cut off here rather than holding the attempt open.
        sock = getattr(conn, "guarded_sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(settings.timeout, cut_off)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        status = response.status
        if 300 <= status < 400:
            location = response.getheader("Location", "")
            raise _Failed(f"HTTP {status}: redirect to {location[:200]!r} not followed", retryable=False, status=status)
        declared = response.getheader("Content-Length")
        if declared and declared.isdigit() and int(declared) > settings.max_bytes:
            raise _Failed(
                f"the body is {int(declared):,} bytes, over the cap of {settings.max_bytes:,}",
                retryable=False,
                status=status,
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = response.read1(64 * 1024)
            if not chunk:
                break
            size += len(chunk)
            if size > settings.max_bytes:
                raise _Failed(
                    f"the body is over the cap of {settings.max_bytes:,} bytes", retryable=False, status=status
                )
            chunks.append(chunk)
        if time.monotonic() >= deadline:
            raise TimeoutError
        return status, b"".join(chunks)
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, http.client.InvalidURL):
            raise _Failed(f"the URL is not valid: {exc}", retryable=False) from exc
        if time.monotonic() >= deadline:
            raise TimeoutError from exc
        raise
    finally:
        watchdog.cancel()
        conn.close()


def _run_attempts(
    request: dict[str, Any],
    once: Callable[[], dict[str, Any]],
    settings: CallSettings,
    *,
    sleep: Callable[[float], None],
    rng: random.Random,
) -> CallResult:
    result = CallResult(request=request)
    for number in range(1, settings.retries + 2):
        started = time.time()
        t0 = time.monotonic()
        attempt = Attempt(number=number, started_at=started, duration_ms=0)
        try:
            result.response = once()
            attempt.status = 200
            attempt.body = json.dumps(result.response, ensure_ascii=False)[:STORED_BODY_CHARS]
        except _Failed as exc:
            attempt.error, attempt.retryable, attempt.status, attempt.body = (
                str(exc),
                exc.retryable,
                exc.status,
                exc.body,
            )
        except OutboundRefused as exc:
            attempt.error, attempt.retryable = f"refused by the outbound guard: {exc}", False
        except TimeoutError:
            attempt.error, attempt.retryable = f"no complete answer within {settings.timeout:g} s", True
        except (ConnectionError, OSError, http.client.HTTPException) as exc:
            attempt.error, attempt.retryable = f"connection failed: {exc or type(exc).__name__}", True
        attempt.duration_ms = int((time.monotonic() - t0) * 1000)
        result.attempts.append(attempt)
        if result.response is not None or not attempt.retryable or number > settings.retries:
            return result
        # Full jitter: spread retries of many concurrent checks instead of synchronising them.
        sleep(rng.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (number - 1))))
    return result


def call_http(
    url: str,
    payload: dict[str, Any],
    idempotency_key: str,
    settings: CallSettings,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> CallResult:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Idempotency-Key": idempotency_key,
        "User-Agent": USER_AGENT,
    }
    request = {"method": "POST", "url": url, "headers": headers, "body": payload}

    def once() -> dict[str, Any]:
        status, raw = _http_attempt(url, body, headers, settings)
        text = raw[:STORED_BODY_CHARS].decode("utf-8", errors="replace")
        if status == 200:
            try:
                return _parse_response(raw)
            except _Failed as exc:
                exc.status, exc.body = status, text
                raise
        retryable = status == 429 or 500 <= status < 600
        raise _Failed(f"HTTP {status}", retryable=retryable, status=status, body=text)

    return _run_attempts(request, once, settings, sleep=sleep, rng=rng or random.Random())


def load_callable(path: str) -> Callable[..., Any]:
    """``package.module:function`` -> the function."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{path!r} is not of the form package.module:function")
    module = importlib.import_module(module_name)
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ValueError(f"{path!r} is not a callable")
    return fn


def call_python(
    fn: Callable[..., Any],
    payload: dict[str, Any],
    settings: CallSettings,
    *,
    label: str,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> CallResult:
    """Call ``fn(question, retrieval, seed)`` with the same timeout, retries and checks as HTTP."""
    request = {"callable": label, "args": [payload["question"], payload["retrieval"], payload["seed"]]}

    def once() -> dict[str, Any]:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = fn(payload["question"], payload["retrieval"], payload["seed"])
            except BaseException as exc:  # the system under test failing is data, not our crash
                box["error"] = exc

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(settings.timeout)
        if thread.is_alive():
            raise TimeoutError
        if "error" in box:
            exc = box["error"]
            raise _Failed(f"the callable raised {type(exc).__name__}: {exc}", retryable=True)
        try:
            raw = json.dumps(box["value"], ensure_ascii=False, default=str).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            raise _Failed(f"the callable returned something that is not JSON: {exc}", retryable=False) from exc
        if len(raw) > settings.max_bytes:
            raise _Failed(f"the response is over the cap of {settings.max_bytes:,} bytes", retryable=False)
        return _parse_response(raw)

    return _run_attempts(request, once, settings, sleep=sleep, rng=rng or random.Random())
