"""The two commands of the README: ``./dev run`` and ``./dev test``.

Unless ``DATABASE_URL`` / ``REDIS_URL`` are set, both start real PostgreSQL and Redis
servers from Python packages; ``run`` keeps their data under ``.local/`` so a second run
reuses it, ``test`` uses a throwaway folder and removes it afterwards.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from reviewapp.embedded import EmbeddedPostgres, EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ROOT / ".local"
PYTHON = sys.executable


def _manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([PYTHON, str(ROOT / "manage.py"), *args], check=True, env=env, cwd=ROOT)


def start_services(stack: ExitStack, env: dict[str, str], *, base: Path, durable: bool, fixed_ports: bool) -> None:
    """Start whichever of PostgreSQL and Redis the environment does not already point at."""
    if not env.get("DATABASE_URL"):
        port = int(env.get("REVIEWAPP_PG_PORT", "54329")) if fixed_ports else free_port()
        pg = EmbeddedPostgres(base / "postgres" / "data", port, durable=durable)
        print(f"starting embedded PostgreSQL on 127.0.0.1:{port}", flush=True)
        pg.start()
        stack.callback(pg.stop)
        pg.create_database("reviewapp")
        env["DATABASE_URL"] = pg.url("reviewapp")
    if not env.get("REDIS_URL"):
        port = int(env.get("REVIEWAPP_REDIS_PORT", "63799")) if fixed_ports else free_port()
        redis = EmbeddedRedis(base / "redis", port)
        print(f"starting embedded Redis on 127.0.0.1:{port}", flush=True)
        redis.start()
        stack.callback(redis.stop)
        env["REDIS_URL"] = redis.url()


def _local_secret_key() -> str:
    path = LOCAL / "secret_key"
    if not path.exists():
        LOCAL.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def _terminate(processes: list[subprocess.Popen]) -> None:
    for proc in processes:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for proc in processes:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_run(args: argparse.Namespace) -> int:
    # Ctrl-C (or a plain kill) stops everything this command started, even when a
    # non-interactive parent left SIGINT ignored.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    env = dict(os.environ)
    env.setdefault("DEBUG", "1")
    env.setdefault("SECRET_KEY", _local_secret_key())
    env.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost")
    env["PORT"] = str(args.port)
    processes: list[subprocess.Popen] = []
    with ExitStack() as stack:
        start_services(stack, env, base=LOCAL, durable=True, fixed_ports=True)
        _manage("migrate", "--noinput", env=env)
        _manage("load_demo", env=env)
        print(f"starting the Celery worker and the web server on http://127.0.0.1:{args.port}", flush=True)
        processes.append(
            subprocess.Popen(
                [
                    PYTHON,
                    "-m",
                    "celery",
                    "-A",
                    "reviewapp",
                    "worker",
                    "--beat",
                    "-l",
                    "info",
                    "--concurrency",
                    "2",
                    "--schedule",
                    str(LOCAL / "celerybeat-schedule"),
                ],
                env=env,
                cwd=ROOT,
            )
        )
        processes.append(
            subprocess.Popen(
                [PYTHON, str(ROOT / "manage.py"), "runserver", f"127.0.0.1:{args.port}", "--noreload"],
                env=env,
                cwd=ROOT,
            )
        )
        try:
            while all(p.poll() is None for p in processes):
                time.sleep(0.5)
            print("a process exited; stopping everything", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nstopping", flush=True)
            return 0
        finally:
            _terminate(processes)


def cmd_test(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    env.setdefault("SECRET_KEY", "test-only-" + secrets.token_urlsafe(40))
    # Tests run the production settings, except what needs TLS or collectstatic.
    env["DEBUG"] = "0"
    env.update(SECURE_SSL_REDIRECT="0", SESSION_COOKIE_SECURE="0", CSRF_COOKIE_SECURE="0", STATIC_MANIFEST="0")
    env.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
    base = Path(tempfile.mkdtemp(prefix="reviewapp-test-"))
    try:
        with ExitStack() as stack:
            start_services(stack, env, base=base, durable=False, fixed_ports=False)
            pytest_args = args.pytest_args
            if pytest_args and pytest_args[0] == "--":
                pytest_args = pytest_args[1:]
            return subprocess.run([PYTHON, "-m", "pytest", *pytest_args], env=env, cwd=ROOT).returncode
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="serve the app with a worker, demo data loaded")
    run.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    run.set_defaults(func=cmd_run)
    test = sub.add_parser("test", help="run the whole test suite (extra arguments go to pytest)")
    test.set_defaults(func=cmd_test)
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "test":
        # Everything after "test" belongs to pytest, options included.
        return cmd_test(argparse.Namespace(pytest_args=argv[1:]))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
