"""Import of cases from JSONL (spec/case-format.md), all or nothing.

The file is read line by line and written in batches with PostgreSQL ``COPY`` inside
one transaction. Every line is validated even after the first error, so the person
importing sees every problem at once; any error rolls the whole transaction back.
Memory stays bounded by the batch size, not the file size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

import orjson
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from cases import canonical, relaxation, roles, validation
from cases.auditctx import current_context
from cases.jsonl import iter_lines, parse_line
from cases.models import AuditAction, AuditEvent, Case, CaseStatus, CaseVersion
from cases.services.audit import change_events

IMPORT_STATUSES = (CaseStatus.DRAFT, CaseStatus.PROPOSED, CaseStatus.ACCEPTED)
BATCH_SIZE = 2000
MAX_REPORTED_ERRORS = 1000

CASE_COLUMNS = (
    "slug",
    "question",
    "tags",
    "source_kind",
    "source_ref",
    "context",
    "rubric",
    "expectations",
    "phrasings",
    "wrong_answers",
    "invariant",
    "status",
    "proposer_id",
    "content_hash",
    "current_version",
    "review_round",
    "retire_requested",
    "revision_justifications",
    "created_at",
    "updated_at",
)


class ImportFailed(Exception):
    """The file imported nothing; ``errors`` names every problem with its line."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__(f"{len(errors)} error(s); nothing was imported")


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    status: str = CaseStatus.DRAFT
    lines: int = 0
    checks_queued: int = 0


@dataclass
class _Row:
    line: int
    content: dict[str, Any]
    fields: dict[str, Any]
    canonical_json: str
    content_hash: str


def _check_permission(user, status: str) -> None:
    if status not in IMPORT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(IMPORT_STATUSES)}, not {status!r}")
    if status == CaseStatus.ACCEPTED:
        if not roles.is_lead(user):
            raise PermissionDenied("importing as accepted skips review, so only leads may do it")
    elif not roles.can_propose(user):
        raise PermissionDenied("only experts and leads may import cases")


def _json(value: Any) -> str:
    if not value:
        return "[]" if isinstance(value, list) else "{}"
    return orjson.dumps(value).decode("utf-8")


def cases_import(
    *,
    stream: IO[bytes],
    user,
    status: str = CaseStatus.DRAFT,
    update: bool = False,
    filename: str = "",
    justification: str = "",
) -> ImportResult:
    """Import every case of a JSONL stream, or nothing.

    ``update=True`` lets ids that already exist replace the stored content (recorded as
    audit events); otherwise an existing id is an error.
    """
    _check_permission(user, status)
    draft = status == CaseStatus.DRAFT
    errors: list[str] = []
    result = ImportResult(status=status)
    seen_ids: dict[str, int] = {}
    batch: list[_Row] = []
    now = timezone.now()
    ctx = current_context() | ({"file": filename[:200]} if filename else {})
    if justification.strip():
        ctx["justification"] = justification.strip()

    def error(text: str) -> None:
        errors.append(text)

    try:
        with transaction.atomic():
            for line_no, raw, problem in iter_lines(
                stream, max_line=settings.IMPORT_MAX_LINE_BYTES, max_file=settings.IMPORT_MAX_FILE_BYTES
            ):
                result.lines = line_no
                if problem:
                    error(problem)
                    continue
                if not raw.strip():
                    continue
                obj, problem = parse_line(raw, line_no)
                if problem:
                    error(problem)
                    continue
                if validation.is_short_format(obj):
                    obj, field_errors = validation.convert_short_format(obj)
                    if field_errors:
                        errors.extend(f"line {line_no}: {e}" for e in field_errors)
                        continue
                field_errors = validation.validate_case(obj, draft=draft)
                if field_errors:
                    errors.extend(f"line {line_no}: {e}" for e in field_errors)
                    continue
                case_id = obj["id"]
                if case_id in seen_ids:
                    error(f"line {line_no}: id: {case_id!r} appears again (first on line {seen_ids[case_id]})")
                    continue
                seen_ids[case_id] = line_no
                fields = canonical.fields_from_content(obj)
                content = canonical.content_from_fields(**fields)
                try:
                    text, digest = canonical.hash_content(content)
                except canonical.NotCanonical as exc:
                    error(f"line {line_no}: cannot be stored as canonical JSON ({exc})")
                    continue
                batch.append(_Row(line_no, content, fields, text, digest))
                if len(batch) >= BATCH_SIZE:
                    _flush(
                        batch, user=user, status=status, update=update, now=now, ctx=ctx, errors=errors, result=result
                    )
                    batch = []
                if len(errors) > MAX_REPORTED_ERRORS:
                    break
            if batch:
                _flush(batch, user=user, status=status, update=update, now=now, ctx=ctx, errors=errors, result=result)
            if result.lines == 0 or (not errors and result.created + result.updated + result.unchanged == 0):
                errors.append("file: contains no cases")
            if errors:
                raise ImportFailed(errors)
            if status == CaseStatus.PROPOSED:
                # Importing as proposed is submitting: each proposal gets its check.
                from cases.services.checks import checks_queue_for_proposals

                result.checks_queued = checks_queue_for_proposals(slugs=list(seen_ids), user=user)
    except IntegrityError as exc:
        # Another import created one of these ids after we looked.
        raise ImportFailed([f"file: a case id already exists ({exc.__cause__ or exc})"]) from exc
    except ImportFailed as exc:
        if len(exc.errors) > MAX_REPORTED_ERRORS:
            exc.errors = [*exc.errors[:MAX_REPORTED_ERRORS], "... more errors not shown; fix these first"]
        raise
    return result


def _flush(
    batch: list[_Row],
    *,
    user,
    status: str,
    update: bool,
    now,
    ctx: dict,
    errors: list[str],
    result: ImportResult,
) -> None:
    """Write one batch, unless an error has already doomed the import (then only check ids)."""
    existing = dict(Case.objects.filter(slug__in=[row.fields["slug"] for row in batch]).values_list("slug", "id"))
    new_rows = []
    for row in batch:
        if row.fields["slug"] in existing:
            if not update:
                errors.append(
                    f"line {row.line}: id: {row.fields['slug']!r} already exists (import it as an update to replace it)"
                )
        else:
            new_rows.append(row)
    if errors:
        return
    if new_rows:
        _copy_new(new_rows, user=user, status=status, now=now, ctx=ctx)
        result.created += len(new_rows)
    if update:
        for row in batch:
            if row.fields["slug"] in existing:
                changed = _update_existing(row, user=user, status=status, now=now, ctx=ctx, errors=errors)
                if changed:
                    result.updated += 1
                else:
                    result.unchanged += 1


def _pg_text_array(items: list[str]) -> str:
    """A text[] literal; psycopg then escapes it for COPY like any other string."""
    return "{" + ",".join('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in items) + "}"


def _copy_new(rows: list[_Row], *, user, status: str, now, ctx: dict) -> None:
    version = 1 if status == CaseStatus.ACCEPTED else None
    slugs = [row.fields["slug"] for row in rows]
    with connection.cursor() as cursor:
        pg = cursor.cursor  # the psycopg cursor under Django's wrapper
        with pg.copy(f"COPY cases_case ({', '.join(CASE_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                f = row.fields
                copy.write_row(
                    (
                        f["slug"],
                        f["question"],
                        _pg_text_array(f["tags"]),
                        f["source_kind"],
                        f["source_ref"],
                        _json(f["context"]),
                        _json(f["rubric"]),
                        _json(f["expectations"]),
                        _json(f["phrasings"]),
                        _json(f["wrong_answers"]),
                        f["invariant"],
                        status,
                        user.pk,
                        row.content_hash,
                        version,
                        1 if status == CaseStatus.PROPOSED else 0,  # importing as proposed is a submission
                        False,
                        "{}",
                        now,
                        now,
                    )
                )
        if status == CaseStatus.ACCEPTED:
            pg.execute("SELECT slug, id FROM cases_case WHERE slug = ANY(%s)", [slugs])
            ids = dict(pg.fetchall())
            with pg.copy(
                "COPY cases_caseversion (case_id, number, canonical_json, content_hash, accepted_by_id, accepted_at, note)"
                " FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(
                        (ids[row.fields["slug"]], 1, row.canonical_json, row.content_hash, user.pk, now, "imported")
                    )
        # One "imported" event per case, built by the server from the rows just written.
        pg.execute(
            "INSERT INTO cases_auditevent (case_id, version, actor_id, at, action, path, before, after,"
            " classification, reason, justification, context)"
            " SELECT id, %s, %s, %s, %s, '', NULL, %s::jsonb, '', '', '', %s::jsonb"
            " FROM cases_case WHERE slug = ANY(%s)",
            [
                version,
                user.pk,
                now,
                AuditAction.IMPORTED.value,
                _json({"status": status, **({"version": 1} if version else {})}),
                _json(ctx),
                slugs,
            ],
        )


def _update_existing(row: _Row, *, user, status: str, now, ctx: dict, errors: list[str]) -> bool:
    """Replace an existing case's content; returns whether anything changed."""
    case = Case.objects.select_for_update().get(slug=row.fields["slug"])
    if case.content_hash == row.content_hash and case.status == status:
        return False
    if case.status in (CaseStatus.ACCEPTED, CaseStatus.RETIRED) and status != CaseStatus.ACCEPTED:
        errors.append(
            f"line {row.line}: id: {case.slug!r} is {case.status}; an accepted case changes only through a "
            "revision or a lead's accepted import"
        )
        return False
    before = canonical.content_of_case(case)
    justification = ctx.get("justification", "")
    if case.current_version and not justification:
        relaxing = [c for c in relaxation.diff_contents(before, row.content) if c.relaxing]
        if relaxing:
            errors.extend(
                f"line {row.line}: {c.path}: relaxing change ({c.reason}) needs a justification" for c in relaxing
            )
            return False
    for name, value in row.fields.items():
        setattr(case, name, value)
    previous_status = case.status
    if status == CaseStatus.PROPOSED and case.status != CaseStatus.PROPOSED:
        case.review_round += 1
    case.status = status
    case.content_hash = row.content_hash
    version = None
    if status == CaseStatus.ACCEPTED:
        version = (case.current_version or 0) + 1
        case.current_version = version
        CaseVersion.objects.create(
            case=case,
            number=version,
            canonical_json=row.canonical_json,
            content_hash=row.content_hash,
            accepted_by=user,
            accepted_at=now,
            note="imported",
        )
    case.save()
    events = change_events(
        case=case,
        before=before,
        after=row.content,
        actor=user,
        version=version,
        at=now,
        context=ctx,
        justification=justification,
    )
    events.append(
        AuditEvent(
            case=case,
            version=version,
            actor=user,
            at=now,
            action=AuditAction.IMPORTED,
            path="status",
            before={"status": previous_status},
            after={"status": status},
            justification=justification,
            context=ctx,
        )
    )
    AuditEvent.objects.bulk_create(events)
    return True
