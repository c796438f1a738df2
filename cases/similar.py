"""Near-duplicate questions: the "similar cases" panel of the editor.

All questions are held normalised in this process's memory and refreshed only when
the set of cases changes, so a lookup is one rapidfuzz ``process.extract`` pass with a
score cutoff, however many cases there are.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import connection
from rapidfuzz import fuzz, process

from cases.scoring import normalize

PREFILTER_CUTOFF = 55
_lock = threading.Lock()
_cache: dict[str, object] = {"stamp": None, "slugs": [], "questions": []}


def _stamp() -> tuple:
    with connection.cursor() as cursor:
        # Both maxima come from indexes; cases are never deleted (their history protects them).
        cursor.execute("SELECT max(updated_at), max(id) FROM cases_case")
        return tuple(cursor.fetchone())


def _corpus() -> tuple[list[str], list[str]]:
    stamp = _stamp()
    with _lock:
        if _cache["stamp"] != stamp:
            with connection.cursor() as cursor:
                cursor.execute("SELECT slug, question FROM cases_case ORDER BY id")
                rows = cursor.fetchall()
            _cache.update(stamp=stamp, slugs=[r[0] for r in rows], questions=[normalize(r[1]) for r in rows])
        return _cache["slugs"], _cache["questions"]  # type: ignore[return-value]


def similar_questions(question: str, *, exclude: str | None = None, limit: int = 5) -> list[tuple[str, float]]:
    """(case id, score 0-100) of the most similar existing questions, best first."""
    query = normalize(question)
    if len(query) < 8:
        return []
    slugs, questions = _corpus()
    # Two passes: the cheap ratio over every question keeps the candidates, then WRatio
    # (several scorers, reordered and partial words too) ranks the few that remain.
    candidates = process.extract(query, questions, scorer=fuzz.ratio, limit=50, score_cutoff=PREFILTER_CUTOFF)
    scored = sorted(
        ((slugs[i], fuzz.WRatio(query, questions[i])) for _, _, i in candidates if slugs[i] != exclude),
        key=lambda pair: -pair[1],
    )
    return [(slug, round(score, 1)) for slug, score in scored if score >= settings.SIMILAR_QUESTION_THRESHOLD][:limit]
