"""Export of cases as JSONL (spec/case-format.md), streamed.

Rows come from PostgreSQL in chunks and JSON columns arrive as text, spliced into the
output line without being decoded and encoded again: export costs little more than
reading the rows, and memory stays flat whatever the number of cases.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db import connection

from cases.models import CaseStatus

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

EXPORT_SQL = """
SELECT slug, question, array_to_json(tags)::text, expectations::text, invariant,
       source_kind, source_ref, context::text, rubric::text, phrasings::text,
       wrong_answers::text, status, current_version
FROM cases_case
{where}
ORDER BY slug
"""

EMPTY_JSON = ("[]", "{}", "null")


def case_line(row: tuple) -> str:
    """One JSONL line (without newline) from a row of :data:`EXPORT_SQL`."""
    (
        slug,
        question,
        tags,
        expectations,
        invariant,
        source_kind,
        source_ref,
        context,
        rubric,
        phrasings,
        wrong_answers,
        status,
        version,
    ) = row
    parts = [
        '{"id":',
        _dumps(slug),
        ',"question":',
        _dumps(question),
        ',"tags":',
        tags,
        ',"expectations":',
        expectations,
        ',"invariant":',
        "true" if invariant else "false",
    ]
    if source_kind:
        source = {"kind": source_kind, **({"ref": source_ref} if source_ref else {})}
        parts += [',"source":', _dumps(source)]
    if context not in EMPTY_JSON:
        parts += [',"context":', context]
    if rubric not in EMPTY_JSON:
        parts += [',"rubric":', rubric]
    if phrasings not in EMPTY_JSON:
        parts += [',"phrasings":', phrasings]
    if wrong_answers not in EMPTY_JSON:
        parts += [',"wrongAnswers":', wrong_answers]
    if version is not None and status in (CaseStatus.ACCEPTED, CaseStatus.RETIRED):
        parts += [',"version":', str(version)]
    parts += [',"status":', _dumps(status), "}"]
    return "".join(parts)


def export_lines(*, status: str | None = None, chunk_size: int = 2000) -> Iterator[str]:
    """Yield one JSONL line (with newline) per case, ordered by id."""
    if status is not None and status not in CaseStatus.values:
        raise ValueError(f"status must be one of {', '.join(CaseStatus.values)}, not {status!r}")
    where = "WHERE status = %s" if status else ""
    params = [status] if status else []
    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        for row in cursor.stream(EXPORT_SQL.format(where=where), params, size=chunk_size):
            yield case_line(row) + "\n"
