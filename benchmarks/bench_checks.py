"""Wall time of the discrimination check through real Celery workers, against its floor.

    .venv/bin/python benchmarks/bench_checks.py [--cases 500] [--concurrency 8 32] [--workers 1]

Per concurrency C: a fresh HTTP target (default target, ``concurrency=C``, baseline plus
the two sabotage modes) pointing at a local server that answers every POST after
``--delay`` (0.1 s); N fresh cases are imported as proposed, which queues one check per
case (3 calls each). Wall time runs from the first ``enqueue`` call (on commit of the
import) until every CheckRun of that target is ``done``/``error`` (the database is
polled every 50 ms). The floor is ``N * 3 * delay / C``: the target's own limit.

The workers are ``celery worker -P prefork -c 2`` subprocesses (``--workers`` of them);
the local target runs in its own process by default (``--server process``) so that the
GIL of this process (polling, bookkeeping) cannot delay its answers; ``--server thread``
runs it in a thread here instead. The server counts requests in flight; the peak and
the mean (busy time / wall time) are reported beside the ratio.

Where the time goes: PostgreSQL sessions and transactions per call (pg_stat_database),
and CPU seconds per call of each part (workers, PostgreSQL including its short-lived
backends, Redis, the target server, this process) sampled from /proc, with how busy the
whole machine was: when CPU per call x calls / CPUs exceeds the floor, no scheduling can
reach it. ``--dump PATH`` writes each round's timeline (server spans, claims, attempts,
task batches) as JSON for a closer look.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _services import ROOT, setup_django

POLL = 0.05
GOOD = {"answer": "Northline is on net 45 terms under the 2026 supply agreement.", "citations": ["doc-northline"]}
BAD = {"answer": "I could not find the payment terms for this customer.", "citations": []}


# -- the local target -------------------------------------------------------------------


class TargetStats:
    """Requests in flight at the server and the (start, end) of every request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.in_flight = 0
            self.peak = 0
            self.spans: list[tuple[float, float]] = []
            self.modes: Counter = Counter()

    def enter(self, mode: str) -> float:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.modes[mode] += 1
        return time.time()

    def leave(self, started: float) -> None:
        ended = time.time()
        with self.lock:
            self.in_flight -= 1
            self.spans.append((started, ended))

    def snapshot(self) -> dict:
        with self.lock:
            return {"peak": self.peak, "spans": list(self.spans), "modes": dict(self.modes)}


def make_server(delay: float, stats: TargetStats) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            mode = json.loads(raw or b"{}").get("retrieval", "?")
            started = stats.enter(mode)
            try:
                time.sleep(delay)
                body = json.dumps(GOOD if mode == "normal" else BAD).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
            finally:
                # Counted out before the answer leaves, so the count never runs ahead of the
                # client's slot (the client frees its slot only once it has read the answer).
                stats.leave(started)
            self.end_headers()  # sends the buffered status line and headers
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)
            self.close_connection = True

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 512  # the default backlog of 5 would drop bursts of connects

    return Server(("127.0.0.1", 0), Handler)


def _server_process(delay: float, conn) -> None:
    stats = TargetStats()
    server = make_server(delay, stats)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    conn.send(server.server_address[1])
    while True:
        command = conn.recv()
        if command == "reset":
            stats.reset()
            conn.send(True)
        elif command == "stats":
            conn.send(stats.snapshot())
        else:
            server.shutdown()
            server.server_close()
            conn.send(True)
            return


class LocalTarget:
    """The local HTTP target, in a thread of this process or in a process of its own."""

    def __init__(self, delay: float, where: str) -> None:
        self.where = where
        if where == "thread":
            self.stats = TargetStats()
            self.server = make_server(delay, self.stats)
            self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
            self.thread.start()
            self.port = self.server.server_address[1]
        else:
            ctx = multiprocessing.get_context("spawn")
            self.conn, child = ctx.Pipe()
            self.process = ctx.Process(target=_server_process, args=(delay, child), daemon=True)
            self.process.start()
            self.port = self.conn.recv()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/answer"

    def _ask(self, command: str):
        self.conn.send(command)
        return self.conn.recv()

    def reset(self) -> None:
        if self.where == "thread":
            self.stats.reset()
        else:
            self._ask("reset")

    def snapshot(self) -> dict:
        return self.stats.snapshot() if self.where == "thread" else self._ask("stats")

    def stop(self) -> None:
        if self.where == "thread":
            self.server.shutdown()
            self.server.server_close()
            return
        if self.process.is_alive():
            with contextlib.suppress(OSError, EOFError):
                self._ask("stop")
            self.process.join(10)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(5)


# -- Celery workers ---------------------------------------------------------------------


class Workers:
    """``--workers`` celery worker processes (prefork pools), started and stopped here."""

    def __init__(self, count: int, pool_size: int, log_dir: Path) -> None:
        self.processes: list[subprocess.Popen] = []
        self.names: list[str] = []
        self.logs: list[Path] = []
        env = {**os.environ}  # DATABASE_URL, REDIS_URL, DEBUG set by setup_django
        for i in range(count):
            name = f"bench{i}-{os.getpid()}@%h"
            log = log_dir / f"worker-{i}.log"
            self.logs.append(log)
            with log.open("wb") as out:
                self.processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "celery",
                            "-A",
                            "reviewapp",
                            "worker",
                            "-l",
                            "warning",
                            "-P",
                            "prefork",
                            "-c",
                            str(pool_size),
                            "--without-mingle",
                            "--without-gossip",
                            "--without-heartbeat",
                            "-n",
                            name,
                        ],
                        cwd=ROOT,
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            self.names.append(name.replace("%h", os.uname().nodename))

    def wait_ready(self, timeout: float = 90) -> None:
        from reviewapp.celery import app

        deadline = time.monotonic() + timeout
        missing = set(self.names)
        while time.monotonic() < deadline:
            for i, process in enumerate(self.processes):
                if process.poll() is not None:
                    raise RuntimeError(f"worker {i} exited:\n{self.logs[i].read_text(errors='replace')[-3000:]}")
            for reply in app.control.ping(destination=sorted(missing), timeout=0.5):
                missing -= set(reply)
            if not missing:
                return
        raise RuntimeError(f"workers not ready after {timeout:.0f} s: {sorted(missing)}")

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)  # warm shutdown of the main process
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
            # Pool children of a cleanly stopped worker are gone; make sure of it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    def errors(self) -> str:
        text = "\n".join(log.read_text(errors="replace") for log in self.logs)
        return "\n".join(line for line in text.splitlines() if "ERROR" in line or "Traceback" in line)[-3000:]


# -- CPU accounting -----------------------------------------------------------------------

CLOCK = os.sysconf("SC_CLK_TCK")


def _proc_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, own CPU ticks, CPU ticks of its reaped children)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    return table


def _machine_ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return sum(values), values[3] + values[4]


def find_pid(match) -> int | None:
    """The oldest process whose command line (a list of words) satisfies ``match``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    words = f.read().replace(b"\0", b" ").decode(errors="replace").split()
            except OSError:
                continue
            if words and match(words):
                found.append(int(entry))
    return min(found) if found else None


class CpuMeter:
    """CPU seconds used by each part of the set-up during a window, sampled from /proc.

    Each process counts for the nearest of the given roots among its ancestors. Processes
    that exit during the window (one PostgreSQL backend per connection) are counted
    through their root's reaped-children time, so short-lived ones are not missed.
    """

    def __init__(self, roots: dict[int, str], every: float = 0.2) -> None:
        self.roots = {pid: name for pid, name in roots.items() if pid}
        self.every = every
        self.first: dict[int, tuple[int, int]] = {}
        self.last: dict[int, tuple[str, int, int]] = {}
        self.alive: set[int] = set()
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def _group(self, pid: int, table) -> str | None:
        seen = 0
        while pid in table and seen < 64:
            if pid in self.roots:
                return self.roots[pid]
            pid = table[pid][0]
            seen += 1
        return None

    def _sample(self, initial: bool = False) -> None:
        table = _proc_table()
        self.alive = set()
        for pid, (_, own, reaped) in table.items():
            group = self._group(pid, table)
            if group is None:
                continue
            self.alive.add(pid)
            if pid not in self.first:
                self.first[pid] = (own, reaped) if initial else (0, reaped)
            self.last[pid] = (group, own, reaped)

    def start(self) -> None:
        self.machine0 = _machine_ticks()
        self._sample(initial=True)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop_event.wait(self.every):
            self._sample()

    def stop(self) -> dict[str, float]:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join()
        self._sample()
        machine1 = _machine_ticks()
        used: Counter = Counter()
        for pid, (group, own, reaped) in self.last.items():
            own0, reaped0 = self.first[pid]
            if pid in self.alive:  # the dead are in their parent's reaped time
                used[group] += (own - own0) / CLOCK
            if pid in self.roots:
                used[group] += (reaped - reaped0) / CLOCK
        total = (machine1[0] - self.machine0[0]) / CLOCK
        idle = (machine1[1] - self.machine0[1]) / CLOCK
        result = dict(used)
        result["machine busy"] = total - idle
        result["machine capacity"] = total
        return result


# -- the benchmark ------------------------------------------------------------------------


def cases_jsonl(prefix: str, n: int) -> bytes:
    lines = []
    for i in range(n):
        case = {
            "id": f"{prefix}-{i:05d}",
            "question": f"What payment terms is Northline on under the 2026 supply agreement? (#{i})",
            "tags": ["payments", "bench"],
            "expectations": [
                {"kind": "must-contain", "value": "45", "why": "the current term; any phrasing"},
                {"kind": "must-cite", "documentId": "doc-northline", "why": "provenance"},
            ],
            "source": {"kind": "synthetic"},
        }
        lines.append(json.dumps(case))
    return ("\n".join(lines) + "\n").encode()


def _levels(spans: list[tuple[float, float]], start: float, end: float) -> dict[int, float]:
    """Seconds spent at each number of requests in flight, between start and end."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    level, previous, spent = 0, start, Counter()
    for at, step in events:
        spent[level] += max(0.0, at - previous)
        level, previous = level + step, max(previous, at)
    spent[level] += max(0.0, end - previous)
    return spent


def time_at_level(spans, start: float, end: float, level: int) -> float:
    return sum(v for k, v in _levels(spans, start, end).items() if k >= level)


def time_below(spans, start: float, end: float, level: int) -> float:
    return sum(v for k, v in _levels(spans, start, end).items() if k < level)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pg_counters() -> dict[str, int]:
    """Sessions opened and transactions committed so far in this database (PostgreSQL 14+)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sessions, xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        )
        sessions, xacts = cursor.fetchone()
    return {"sessions": sessions, "xacts": xacts}


def cpu_roots(server: LocalTarget, workers: Workers) -> dict[int, str]:
    from urllib.parse import urlsplit

    roots = {os.getpid(): "benchmark process"}
    if server.where == "process":
        roots[server.process.pid] = "target server"
    for process in workers.processes:
        roots[process.pid] = "celery workers"
    pg_port = urlsplit(os.environ["DATABASE_URL"]).port
    redis_port = urlsplit(os.environ["REDIS_URL"]).port
    # The postmaster ("postgres -D DIR ... -p PORT") and redis-server (which retitles itself
    # "redis-server 127.0.0.1:PORT").
    roots[find_pid(lambda w: w[0].endswith("postgres") and "-D" in w and f"{pg_port}" in w) or 0] = "postgresql"
    roots[find_pid(lambda w: w[0].endswith("redis-server") and f"127.0.0.1:{redis_port}" in w) or 0] = "redis"
    return roots


def run_one(
    *,
    n: int,
    concurrency: int,
    delay: float,
    lead,
    server: LocalTarget,
    roots: dict[int, str],
    stamp: str,
    limit: float,
    dump: Path | None,
) -> dict:
    from celery.signals import before_task_publish
    from django.db.models import Max, Min

    from cases.models import CheckAttempt, CheckRun, CheckState, Target
    from cases.services import cases_import, checks
    from cases.services.checks import target_save

    name = f"bench-c{concurrency}-{stamp}"
    target = Target(
        name=name,
        kind="http",
        url=server.url,
        sabotage_modes=["disabled", "random-chunk"],
        concurrency=concurrency,
        allowed_hosts=["127.0.0.1"],
        is_default=True,
    )
    target_save(target=target, user=lead)
    server.reset()

    marks: dict[str, float] = {}
    original = checks.enqueue

    batches: list[list[int]] = []

    def published(sender=None, body=None, **kwargs):
        if sender == "cases.tasks.run_checks":
            batches.append(list(body[0][0]))  # protocol 2: (args, kwargs, embed); args = [run_ids]

    meter = CpuMeter(roots)

    def timed_enqueue(run_ids, target_):
        if "enqueue" not in marks:
            meter.start()
        marks.setdefault("enqueue", time.perf_counter())
        marks.setdefault("enqueue_wall", time.time())
        original(run_ids, target_)
        marks["enqueued"] = time.perf_counter()

    checks.enqueue = timed_enqueue
    before_task_publish.connect(published)
    try:
        t_import = time.perf_counter()
        result = cases_import(stream=io.BytesIO(cases_jsonl(name, n)), user=lead, status="proposed")
        t_imported = time.perf_counter()
    finally:
        checks.enqueue = original
        before_task_publish.disconnect(published)
    assert result.created == n and result.checks_queued == n, result
    runs = CheckRun.objects.filter(target=target)
    open_states = [CheckState.QUEUED, CheckState.RUNNING]
    pg_before = pg_counters()
    deadline = time.perf_counter() + limit
    while runs.filter(state__in=open_states).exists():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"not finished after {limit:.0f} s: {runs.filter(state__in=open_states).count()} open")
        time.sleep(POLL)
    t_done = time.perf_counter()
    cpu = meter.stop()
    t0 = marks["enqueue"]
    time.sleep(0.6)  # pg_stat_database is flushed by each backend at most every 0.5 s (or at exit)
    pg_after = pg_counters()
    wall = t_done - t0
    floor = n * 3 * delay / concurrency

    stats = server.snapshot()
    spans = stats["spans"]
    base = marks["enqueue_wall"]
    first_start = min(s for s, _ in spans) - base
    last_end = max(e for _, e in spans) - base
    busy = sum(e - s for s, e in spans)
    served = [e - s for s, e in spans]
    times = runs.aggregate(first_claim=Min("started_at"), last_claim=Max("started_at"), last_done=Max("finished_at"))
    attempts = CheckAttempt.objects.filter(run__target=target)
    dumped = None
    if dump is not None:
        timeline = {
            "concurrency": concurrency,
            "delay": delay,
            "enqueue": base,
            "done": base + wall,
            "batches": batches,
            "server": spans,
            "runs": [
                {"id": pk, "claimed": started.timestamp(), "finished": finished.timestamp()}
                for pk, started, finished in runs.values_list("pk", "started_at", "finished_at")
            ],
            "calls": [
                {"run": run_id, "mode": mode, "start": started.timestamp(), "ms": ms}
                for run_id, mode, started, ms in attempts.values_list("run_id", "mode", "started_at", "duration_ms")
            ],
        }
        dumped = dump.with_name(f"{dump.stem}-c{concurrency}{dump.suffix or '.json'}")
        dumped.write_text(json.dumps(timeline))
    return {
        "concurrency": concurrency,
        "cases": n,
        "wall": wall,
        "floor": floor,
        "ratio": wall / floor,
        "import": t_imported - t_import,
        "import_before_enqueue": t0 - t_import,
        "enqueue_call": marks["enqueued"] - t0,
        "requests": len(spans),
        "modes": stats["modes"],
        "attempts": attempts.count(),
        "peak": stats["peak"],
        "mean_in_flight": busy / wall,
        "first_request": first_start,
        "last_response": last_end,
        "tail_after_last_response": wall - last_end,
        "served_p50": percentile(served, 0.5),
        "served_max": max(served),
        "first_claim": times["first_claim"].timestamp() - base,
        "last_claim": times["last_claim"].timestamp() - base,
        "last_finished": times["last_done"].timestamp() - base,
        "states": dict(Counter(runs.values_list("state", flat=True))),
        "verdicts": dict(Counter(runs.values_list("verdict", flat=True))),
        "pg_sessions": pg_after["sessions"] - pg_before["sessions"],
        "pg_xacts": pg_after["xacts"] - pg_before["xacts"],
        "cpu": cpu,
        "full": time_at_level(spans, base, base + wall, concurrency),
        "half": time_below(spans, base, base + wall, (concurrency + 1) // 2),
        "dumped": dumped,
        "tasks": len(batches),
        "batch": max((len(b) for b in batches), default=0),
    }


def report(r: dict) -> None:
    print(
        f"\nconcurrency {r['concurrency']}: {r['cases']} cases x 3 calls, "
        f"{r['tasks']} tasks of up to {r['batch']} runs ({3 * r['batch']} calls)"
    )
    print(
        f"  wall {r['wall']:.2f} s   floor {r['floor']:.2f} s   ratio {r['ratio']:.2f}x   "
        f"(import before enqueue {r['import_before_enqueue']:.2f} s, enqueue call {r['enqueue_call'] * 1000:.0f} ms)"
    )
    print(
        f"  at the server: {r['requests']} requests {r['modes']}, peak in flight {r['peak']}, "
        f"mean in flight {r['mean_in_flight']:.1f} (of {r['concurrency']}); "
        f"served p50 {r['served_p50'] * 1000:.0f} ms, max {r['served_max'] * 1000:.0f} ms"
    )
    print(
        f"  the server had all {r['concurrency']} in flight {r['full']:.2f} s ({100 * r['full'] / r['wall']:.0f}% of "
        f"the wall), fewer than half {r['half']:.2f} s ({100 * r['half'] / r['wall']:.0f}%)"
    )
    print(
        f"  timeline from enqueue: first claim +{r['first_claim']:.2f} s, first request +{r['first_request']:.2f} s, "
        f"last claim +{r['last_claim']:.2f} s, last response +{r['last_response']:.2f} s, "
        f"last run finished +{r['last_finished']:.2f} s, seen done +{r['wall']:.2f} s"
    )
    print(
        f"  PostgreSQL: {r['pg_sessions']} sessions opened, {r['pg_xacts']} transactions "
        f"({r['pg_sessions'] / r['requests']:.2f} and {r['pg_xacts'] / r['requests']:.1f} per call)"
    )
    cpu, calls = dict(r["cpu"]), r["requests"]
    busy, capacity = cpu.pop("machine busy"), cpu.pop("machine capacity")
    ours = sum(cpu.values())
    r["cpu_per_call"], r["cpu_others"] = 1000 * ours / calls, max(0.0, busy - ours)
    parts = ", ".join(f"{name} {1000 * v / calls:.1f}" for name, v in sorted(cpu.items(), key=lambda kv: -kv[1]))
    cpus = os.cpu_count() or 1
    print(
        f"  CPU per call (ms): {parts}; total {1000 * ours / calls:.1f}. Machine: {busy:.1f} of {capacity:.1f} "
        f"CPU-s busy ({100 * busy / capacity:.0f}%), other processes {max(0.0, busy - ours):.1f} CPU-s"
    )
    print(
        f"  CPU alone needs >= {ours / cpus:.2f} s on {cpus} CPUs ({ours / cpus / r['floor']:.2f}x the floor); "
        f"the floor needs <= {1000 * cpus * r['floor'] / calls:.1f} ms of CPU per call"
    )
    print(f"  states {r['states']}  verdicts {r['verdicts']}  attempts recorded {r['attempts']}")
    if r["dumped"]:
        print(f"  timeline written to {r['dumped']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--workers", type=int, default=1, help="celery worker processes (each -P prefork -c 2)")
    parser.add_argument("--pool", type=int, default=2, help="prefork pool size of each worker")
    parser.add_argument("--delay", type=float, default=0.1, help="seconds the target takes to answer")
    parser.add_argument("--server", choices=["process", "thread"], default="process")
    parser.add_argument("--dump", type=Path, help="write each round's timeline (JSON) next to this path")
    parser.add_argument("--limit", type=float, default=600, help="give up on a round after this many seconds")
    args = parser.parse_args()

    setup_django(database="benchchecks")
    from django.contrib.auth.models import Group, User

    lead, _ = User.objects.get_or_create(username="bench-lead")
    lead.groups.add(Group.objects.get(name="lead"))

    log_dir = Path(tempfile.mkdtemp(prefix="bench-checks-"))
    server = LocalTarget(args.delay, args.server)
    workers = None
    results = []
    try:
        workers = Workers(args.workers, args.pool, log_dir)
        t = time.perf_counter()
        workers.wait_ready()
        print(
            f"{args.workers} worker(s) x prefork {args.pool} ready in {time.perf_counter() - t:.1f} s; "
            f"target server in a {args.server}, answers after {args.delay * 1000:.0f} ms; {os.cpu_count()} CPUs"
        )
        stamp = time.strftime("%H%M%S")
        roots = cpu_roots(server, workers)
        for concurrency in args.concurrency:
            r = run_one(
                n=args.cases,
                concurrency=concurrency,
                delay=args.delay,
                lead=lead,
                server=server,
                roots=roots,
                stamp=stamp,
                limit=args.limit,
                dump=args.dump,
            )
            report(r)
            results.append(r)
    finally:
        if workers is not None:
            problems = workers.errors()
            workers.stop()
            if problems:
                print(f"\nworker errors (logs in {log_dir}):\n{problems}")
            else:
                shutil.rmtree(log_dir, ignore_errors=True)
        server.stop()

    print("\nsummary")
    for r in results:
        verdict = "ok" if r["ratio"] <= 1.2 else "ABOVE 1.2x"
        print(
            f"  concurrency {r['concurrency']:>3}: wall {r['wall']:6.2f} s  floor {r['floor']:5.2f} s  "
            f"ratio {r['ratio']:5.2f}x  peak {r['peak']:>3}  mean in flight {r['mean_in_flight']:5.1f}  "
            f"CPU {r['cpu_per_call']:4.1f} ms/call, other processes {r['cpu_others']:4.1f} CPU-s  {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
