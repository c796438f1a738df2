"""Shared set-up for the benchmarks: real PostgreSQL/Redis (embedded unless
``DATABASE_URL`` is set), a fresh database, Django configured and migrated."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(database: str = "bench") -> None:
    from reviewapp.embedded import EmbeddedPostgres, EmbeddedRedis, free_port

    if not os.environ.get("DATABASE_URL"):
        base = Path(tempfile.mkdtemp(prefix="reviewapp-bench-"))
        pg = EmbeddedPostgres(base / "postgres" / "data", free_port(), durable=False)
        pg.start()
        pg.create_database(database)
        os.environ["DATABASE_URL"] = pg.url(database)
        redis = EmbeddedRedis(base / "redis", free_port())
        redis.start()
        os.environ["REDIS_URL"] = redis.url()

        def stop() -> None:
            redis.stop()
            pg.stop()
            shutil.rmtree(base, ignore_errors=True)

        atexit.register(stop)
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def rss_mib() -> float:
    """Current resident set size of this process, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")
