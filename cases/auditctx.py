"""Where a change came from, so every audit event says why it exists.

The web middleware, management commands and Celery tasks each open a context; services
read it when they write audit events.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_current: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("audit_context", default=None)


@contextmanager
def audit_context(interface: str, **details: Any) -> Iterator[dict[str, Any]]:
    ctx = {"interface": interface, "id": uuid.uuid4().hex[:16], **details}
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)


def current_context() -> dict[str, Any]:
    return dict(_current.get() or {"interface": "unknown"})
