"""Audit events for content changes, classified tightening / relaxing / neutral."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from cases import relaxation, roles
from cases.models import AuditAcknowledgement, AuditEvent, Case


def change_events(
    *,
    case: Case,
    before: dict[str, Any],
    after: dict[str, Any],
    actor,
    version: int | None,
    justifications: dict[str, str] | None = None,
    justification: str = "",
    context: dict[str, Any],
    at=None,
) -> list[AuditEvent]:
    """Unsaved audit events, one per change from ``before`` to ``after``.

    ``justifications`` are per change (by ``Change.key``); ``justification`` covers every
    change without one of its own (one text for a whole admin edit or import)."""
    justifications = justifications or {}
    at = at or timezone.now()
    return [
        AuditEvent(
            case=case,
            version=version,
            actor=actor,
            at=at,
            action=change.action,
            path=change.path,
            before=change.before,
            after=change.after,
            classification=change.classification,
            reason=change.reason,
            justification=justifications.get(change.key) or justification,
            context=context | ({"why": change.why} if change.why else {}),
        )
        for change in relaxation.diff_contents(before, after)
    ]


def unjustified(changes: list[relaxation.Change], justifications: dict[str, str]) -> list[relaxation.Change]:
    """Relaxing changes that nobody has justified yet."""
    return [c for c in changes if c.relaxing and not (justifications.get(c.key) or "").strip()]


def audit_acknowledge(*, event: AuditEvent, user, note: str = "") -> AuditAcknowledgement:
    """A lead accepts a relaxation (or override) as justified."""
    if not roles.is_lead(user):
        raise PermissionDenied("only leads acknowledge relaxations")
    with transaction.atomic():
        existing = AuditAcknowledgement.objects.filter(event=event).first()
        if existing:
            return existing
        return AuditAcknowledgement.objects.create(event=event, lead=user, note=note.strip())
