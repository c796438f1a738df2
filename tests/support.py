"""Real moving parts for tests: a Celery worker process and a scripted HTTP target."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class WorkerProcess:
    """``celery worker`` in its own process, on the test database."""

    def __init__(
        self, database_name: str, extra_env: dict[str, str] | None = None, concurrency: int = 2, queue: str = "celery"
    ):
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"test-worker-{os.getpid()}-{time.monotonic_ns()}.log"
        url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database_name
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "CHECK_TIME_MARGIN": "2",
            "CONN_MAX_AGE": "0",
            **(extra_env or {}),
        }
        self.log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "reviewapp",
                "worker",
                "-l",
                "info",
                "-P",
                "prefork",
                "-c",
                str(concurrency),
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
                "-Q",
                queue,
                "-n",
                f"test-{time.monotonic_ns()}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if b" ready." in self.log_path.read_bytes():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("the Celery worker did not start:\n" + self.log_path.read_text(errors="replace")[-3000:])

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children), as a crash would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 9)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


class ScriptedTarget:
    """A local HTTP server speaking the target protocol, with a behaviour per path.

    ``/seq/503,503,200`` answers each request of the same Idempotency-Key with the next
    status of the list; ``handlers`` maps a path to a function returning
    (status, body bytes, headers) for custom behaviours.
    """

    def __init__(self, answer: Callable[[dict], dict] | None = None):
        self.answer = answer or (lambda payload: {"answer": "I don't know.", "citations": []})
        self.requests: list[dict] = []
        self.counts: Counter = Counter()
        self.handlers: dict[str, Callable[[dict, int], tuple[int, bytes, dict]]] = {}
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                payload = json.loads(raw or b"{}")
                key = self.headers.get("Idempotency-Key", "")
                with outer.lock:
                    outer.counts[(self.path, key)] += 1
                    n = outer.counts[(self.path, key)]
                    outer.requests.append(
                        {"path": self.path, "key": key, "payload": payload, "headers": dict(self.headers)}
                    )
                status, body, headers = outer.respond(self.path, payload, n)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base + path

    def respond(self, path: str, payload: dict, n: int) -> tuple[int, bytes, dict]:
        route = path.split("?")[0]
        if route in self.handlers:
            return self.handlers[route](payload, n)
        if route.startswith("/seq/"):
            statuses = [int(s) for s in route[5:].split(",")]
            status = statuses[min(n, len(statuses)) - 1]
            if status != 200:
                return status, b'{"error": "scripted"}', {"Content-Type": "application/json"}
        return 200, json.dumps(self.answer(payload)).encode(), {"Content-Type": "application/json"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.1, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


# A Python-callable system under test whose answers the test sets (target kind "callable",
# path "tests.support:scripted_answer").
SCRIPTED_ANSWERS: dict[str, dict] = {}


def scripted_answer(question: str, retrieval: str, seed: int) -> dict:
    return SCRIPTED_ANSWERS.get(question, {"answer": "I don't know."})
