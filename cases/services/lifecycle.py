"""Proposing cases: create, edit, submit (draft -> proposed -> changes requested -> proposed)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from cases import canonical, roles, validation
from cases.auditctx import current_context
from cases.models import AuditAction, AuditEvent, Case, CaseStatus
from cases.services.editing import content_changes

EDITABLE = (CaseStatus.DRAFT, CaseStatus.CHANGES_REQUESTED)


class CaseProblems(Exception):
    """The case cannot be saved or submitted; ``problems`` are FieldErrors naming the field."""

    def __init__(self, problems: list[validation.FieldError]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def can_edit(case: Case, user) -> bool:
    return case.proposer_id == getattr(user, "pk", None) and case.status in EDITABLE and roles.can_propose(user)


def case_create(*, user, content: dict[str, Any]) -> Case:
    """A new draft owned by ``user``."""
    if not roles.can_propose(user):
        raise PermissionDenied("only experts and leads propose cases")
    problems = validation.validate_case(content, draft=True)
    if not problems and Case.objects.filter(slug=content["id"]).exists():
        problems.append(validation.FieldError("id", f"{content['id']!r} is taken; choose another id"))
    if problems:
        raise CaseProblems(problems)
    fields = canonical.fields_from_content(content)
    _, digest = canonical.hash_content(canonical.content_from_fields(**fields))
    with transaction.atomic():
        case = Case.objects.create(**fields, status=CaseStatus.DRAFT, proposer=user, content_hash=digest)
        AuditEvent.objects.create(
            case=case,
            actor=user,
            at=timezone.now(),
            action=AuditAction.CREATED,
            after={"status": CaseStatus.DRAFT},
            context=current_context(),
        )
    return case


def case_update(*, case: Case, user, content: dict[str, Any]) -> Case:
    """Save the proposer's edit of a draft or of a case sent back for changes."""
    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if not can_edit(case, user):
            raise PermissionDenied("only the proposer edits a case, and only while it is a draft or sent back")
        content = dict(content, id=case.slug)  # the id is stable once created
        problems = validation.validate_case(content, draft=True)
        if problems:
            raise CaseProblems(problems)
        before = canonical.content_of_case(case)
        fields = canonical.fields_from_content(content)
        after = canonical.content_from_fields(**fields)
        if after == before:
            return case
        for name, value in fields.items():
            setattr(case, name, value)
        _, case.content_hash = canonical.hash_content(after)
        case.save()
        now, ctx = timezone.now(), current_context()
        AuditEvent.objects.bulk_create(
            AuditEvent(case=case, actor=user, at=now, context=ctx, **change)
            for change in content_changes(before, after)
        )
    return case


def submission_problems(case: Case) -> list[validation.FieldError]:
    """Everything that keeps a case from review: every why, an expectation, tags."""
    return validation.validate_case(canonical.content_of_case(case), draft=False)


def case_submit(*, case: Case, user) -> Case:
    """Send a draft (or a case sent back) to review, and queue its automatic checks."""
    from cases.services.checks import checks_queue_for_proposals

    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if not can_edit(case, user):
            raise PermissionDenied("only the proposer submits a case, and only while it is a draft or sent back")
        problems = submission_problems(case)
        if problems:
            raise CaseProblems(problems)
        before = case.status
        case.status = CaseStatus.PROPOSED
        case.review_round += 1
        case.save(update_fields=["status", "review_round", "updated_at"])
        AuditEvent.objects.create(
            case=case,
            actor=user,
            at=timezone.now(),
            action=AuditAction.STATUS_CHANGED,
            path="status",
            before=before,
            after=CaseStatus.PROPOSED,
            context=current_context(),
        )
        checks_queue_for_proposals(slugs=[case.slug], user=user)
    return case
