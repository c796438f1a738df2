"""Edits to a case's working copy, each recorded in the audit trail in the same transaction."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from cases import canonical, validation
from cases.auditctx import current_context
from cases.models import AuditAction, AuditEvent, Case, CaseStatus
from cases.services.audit import change_events

FROZEN_STATUSES = (CaseStatus.ACCEPTED, CaseStatus.RETIRED, CaseStatus.REJECTED)


def edit_problems(stored: Case | None, content: dict[str, Any], status: str) -> list[str]:
    """What forbids saving ``content`` with ``status`` over ``stored`` (None for a new case)."""
    problems = [str(e) for e in validation.validate_case(content, draft=status == CaseStatus.DRAFT)]
    if stored is None:
        if status == CaseStatus.ACCEPTED:
            problems.append("status: a case becomes accepted through review, not by creating it accepted")
        return problems
    if status != stored.status and status == CaseStatus.ACCEPTED:
        problems.append("status: a case becomes accepted through review, not in the admin")
    if stored.status in (CaseStatus.ACCEPTED, CaseStatus.RETIRED) and status != stored.status:
        problems.append(
            f"status: a {stored.status} case changes status only through a reviewed revision or retirement request"
        )
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
        case.current_version = stored.current_version
        case.save()
        events = change_events(
            case=case,
            before=before,
            after=content,
            actor=actor,
            version=None,
            context=ctx,
            at=now,
            justification=justification,
        )
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
