"""Edits to a case's working copy, each recorded in the audit trail in the same transaction."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from cases import canonical, validation
from cases.auditctx import current_context
from cases.models import AuditAction, AuditEvent, Case, CaseStatus

FROZEN_STATUSES = (CaseStatus.ACCEPTED, CaseStatus.RETIRED, CaseStatus.REJECTED)


def content_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The audited differences between two contents: expectations, tags and invariant."""
    changes: list[dict[str, Any]] = []
    old, new = before.get("expectations", []), after.get("expectations", [])
    for i in range(max(len(old), len(new))):
        if i >= len(old):
            changes.append(
                {"action": AuditAction.EXPECTATION_ADDED, "path": f"expectations[{i}]", "before": None, "after": new[i]}
            )
        elif i >= len(new):
            changes.append(
                {
                    "action": AuditAction.EXPECTATION_REMOVED,
                    "path": f"expectations[{i}]",
                    "before": old[i],
                    "after": None,
                }
            )
        elif old[i] != new[i]:
            changes.append(
                {
                    "action": AuditAction.EXPECTATION_MODIFIED,
                    "path": f"expectations[{i}]",
                    "before": old[i],
                    "after": new[i],
                }
            )
    if before.get("tags", []) != after.get("tags", []):
        changes.append(
            {
                "action": AuditAction.TAGS_CHANGED,
                "path": "tags",
                "before": before.get("tags", []),
                "after": after.get("tags", []),
            }
        )
    if bool(before.get("invariant")) != bool(after.get("invariant")):
        changes.append(
            {
                "action": AuditAction.INVARIANT_CHANGED,
                "path": "invariant",
                "before": bool(before.get("invariant")),
                "after": bool(after.get("invariant")),
            }
        )
    return changes


def edit_problems(stored: Case | None, content: dict[str, Any], status: str) -> list[str]:
    """What forbids saving ``content`` with ``status`` over ``stored`` (None for a new case)."""
    problems = [str(e) for e in validation.validate_case(content, draft=status == CaseStatus.DRAFT)]
    if stored is None:
        if status == CaseStatus.ACCEPTED:
            problems.append("status: a case becomes accepted through review, not by creating it accepted")
        return problems
    if status != stored.status and status == CaseStatus.ACCEPTED:
        problems.append("status: a case becomes accepted through review, not in the admin")
    if stored.status in FROZEN_STATUSES and canonical.content_of_case(stored) != content:
        problems.append(f"this case is {stored.status}: its content changes only through a revision")
    return problems


def case_admin_save(*, case: Case, actor, justification: str = "") -> Case:
    """Save an admin edit: validated, hashed, and every audited change recorded."""
    content = canonical.content_of_case(case)
    now = timezone.now()
    ctx = current_context()
    with transaction.atomic():
        stored = Case.objects.select_for_update().filter(pk=case.pk).first() if case.pk else None
        problems = edit_problems(stored, content, case.status)
        if problems:
            raise ValidationError(problems)
        _, case.content_hash = canonical.hash_content(content)
        if stored is None:
            case.save()
            AuditEvent.objects.create(
                case=case,
                actor=actor,
                at=now,
                action=AuditAction.CREATED,
                after=content | {"status": case.status},
                justification=justification,
                context=ctx,
            )
            return case
        before = canonical.content_of_case(stored)
        changes = content_changes(before, content)
        case.current_version = stored.current_version
        case.save()
        events = [
            AuditEvent(case=case, version=None, actor=actor, at=now, justification=justification, context=ctx, **change)
            for change in changes
        ]
        if case.status != stored.status:
            action = AuditAction.RETIRED if case.status == CaseStatus.RETIRED else AuditAction.STATUS_CHANGED
            events.append(
                AuditEvent(
                    case=case,
                    version=stored.current_version,
                    actor=actor,
                    at=now,
                    action=action,
                    path="status",
                    before=stored.status,
                    after=case.status,
                    justification=justification,
                    context=ctx,
                )
            )
        AuditEvent.objects.bulk_create(events)
    return case
