"""A per-target limit on calls in flight, shared by every worker on every machine.

A Redis sorted set holds one member per call in flight, scored by when its holder's
claim expires, so a worker killed mid-call frees its slot once the claim runs out.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

import redis
from django.conf import settings

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    return 1
end
return 0
"""


@lru_cache(maxsize=4)
def _client(url: str) -> tuple[redis.Redis, object]:
    client = redis.Redis.from_url(url)
    return client, client.register_script(_ACQUIRE)


@contextmanager
def target_slot(target_id: int, limit: int, hold_for: float) -> Iterator[None]:
    """Wait for one of ``limit`` slots of a target, for at most ``hold_for`` seconds of use."""
    client, acquire = _client(settings.REDIS_URL)
    key = f"reviewapp:target-slots:{target_id}"
    token = uuid.uuid4().hex
    delay = 0.005
    while True:
        now = time.time()
        if acquire(keys=[key], args=[now, limit, now + hold_for, token, int(hold_for * 2000)]):
            break
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 1.5, 0.05)
    try:
        yield
    finally:
        client.zrem(key, token)
