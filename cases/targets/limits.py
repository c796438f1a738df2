"""Time budgets of a check, ordered so nothing is cut off by the layer below it:

HTTP timeout < worst case of one call < soft time limit < hard time limit
             < lease (when the sweep may hand the run to another worker)
             < broker visibility timeout (when Redis re-delivers the message)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from cases.targets.client import BACKOFF_CAP

# Seconds added at each layer; tests shrink it so a lost worker is noticed quickly.
MARGIN = float(os.environ.get("CHECK_TIME_MARGIN", "20"))


@dataclass(frozen=True)
class CheckBudget:
    call_worst: float
    soft_limit: float
    hard_limit: float
    lease: float


def check_budget(*, timeout: float, retries: int, calls: int, concurrency: int) -> CheckBudget:
    # Every attempt may take the full timeout, and each retry waits at most BACKOFF_CAP.
    call_worst = (retries + 1) * timeout + retries * BACKOFF_CAP
    waves = math.ceil(calls / max(1, min(concurrency, calls)))
    soft = waves * call_worst + MARGIN
    hard = soft + MARGIN
    return CheckBudget(call_worst=call_worst, soft_limit=soft, hard_limit=hard, lease=hard + MARGIN)
