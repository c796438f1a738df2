"""Proposing cases and revising accepted ones.

draft -> proposed -> (changes requested -> proposed)* -> accepted | rejected; an accepted
case is never edited in place: ``revision_start`` opens its content for editing while the
accepted version stays in ``CaseVersion``, and the revision is reviewed like a proposal.
Retiring is a revision too (``retirement_request``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from cases import canonical, relaxation, roles, validation
from cases.auditctx import current_context
from cases.models import AuditAction, AuditEvent, Case, CaseStatus, CaseVersion, PromptArtifact
from cases.services.audit import change_events, unjustified

EDITABLE = (CaseStatus.DRAFT, CaseStatus.CHANGES_REQUESTED)


class CaseProblems(Exception):
    """The case cannot be saved or submitted; ``problems`` are FieldErrors naming the field."""

    def __init__(self, problems: list[validation.FieldError]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def can_edit(case: Case, user) -> bool:
    return case.author_id == getattr(user, "pk", None) and case.status in EDITABLE and roles.can_propose(user)


def base_content(case: Case) -> dict[str, Any] | None:
    """The accepted content a revision started from (None when it is not a revision)."""
    if not case.revision_of:
        return None
    version = CaseVersion.objects.get(case=case, number=case.revision_of)
    return json.loads(version.canonical_json)


def revision_changes(case: Case, content: dict[str, Any] | None = None) -> list[relaxation.Change]:
    """What a revision changes against the accepted version, each classified."""
    base = base_content(case)
    if base is None:
        return []
    return relaxation.diff_contents(base, content if content is not None else canonical.content_of_case(case))


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


def case_update(*, case: Case, user, content: dict[str, Any], justifications: dict[str, str] | None = None) -> Case:
    """Save the author's edit of a draft, a case sent back, or a revision.

    In a revision every relaxing change (against the accepted version) needs a
    justification that answers the expectation's why; without one nothing is saved.
    """
    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if not can_edit(case, user):
            raise PermissionDenied("only the author edits a case, and only while it is a draft or sent back")
        content = dict(content, id=case.slug)  # the id is stable once created
        problems = validation.validate_case(content, draft=True)
        if problems:
            raise CaseProblems(problems)
        fields = canonical.fields_from_content(content)
        after = canonical.content_from_fields(**fields)
        merged = dict(case.revision_justifications)
        merged.update({k: v.strip() for k, v in (justifications or {}).items() if v and v.strip()})
        changes = revision_changes(case, after)
        missing = unjustified(changes, merged)
        if missing:
            raise CaseProblems(
                [
                    validation.FieldError(
                        change.path,
                        f"relaxing change ({change.reason}) needs a justification"
                        + (f" that answers its why: {change.why!r}" if change.why else ""),
                    )
                    for change in missing
                ]
            )
        before = canonical.content_of_case(case)
        if after == before and merged == case.revision_justifications:
            return case
        for name, value in fields.items():
            setattr(case, name, value)
        _, case.content_hash = canonical.hash_content(after)
        live_keys = {c.key for c in changes}
        case.revision_justifications = {k: v for k, v in merged.items() if k in live_keys or k == "status"}
        case.save()
        version = case.revision_of + 1 if case.revision_of else None
        AuditEvent.objects.bulk_create(
            change_events(
                case=case,
                before=before,
                after=after,
                actor=user,
                version=version,
                justifications=case.revision_justifications,
                context=current_context() | ({"revision": case.revision_key} if case.revision_key else {}),
            )
        )
    return case


def submission_problems(case: Case) -> list[validation.FieldError]:
    """Everything that keeps a case from review: every why, an expectation, tags."""
    return validation.validate_case(canonical.content_of_case(case), draft=False)


def _to_review(case: Case, user, *, action: str = AuditAction.STATUS_CHANGED, justification: str = "") -> None:
    before = case.status
    case.status = CaseStatus.PROPOSED
    case.review_round += 1
    case.save()
    AuditEvent.objects.create(
        case=case,
        actor=user,
        at=timezone.now(),
        action=action,
        path="status",
        before=before,
        after=CaseStatus.PROPOSED,
        justification=justification,
        context=current_context(),
    )


def case_submit(*, case: Case, user) -> Case:
    """Send a draft, a case sent back or a revision to review, and queue its checks."""
    from cases.services.checks import checks_queue_for_proposals

    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if not can_edit(case, user):
            raise PermissionDenied("only the author submits a case, and only while it is a draft or sent back")
        problems = submission_problems(case)
        missing = unjustified(revision_changes(case), case.revision_justifications)
        problems += [
            validation.FieldError(c.path, f"relaxing change ({c.reason}) needs a justification") for c in missing
        ]
        if problems:
            raise CaseProblems(problems)
        _to_review(case, user)
        checks_queue_for_proposals(slugs=[case.slug], user=user)
        if PromptArtifact.objects.exists():
            from cases.tasks import scan_leaks

            case_id = case.pk
            transaction.on_commit(lambda: scan_leaks.delay([case_id]))
    return case


def revision_start(*, case: Case, user) -> Case:
    """Open an accepted case for a revision by ``user``; its accepted version stays in force."""
    if not roles.can_propose(user):
        raise PermissionDenied("only experts and leads propose revisions")
    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if case.status != CaseStatus.ACCEPTED:
            raise PermissionDenied(f"only an accepted case can be revised; this one is {case.status}")
        case.status = CaseStatus.DRAFT
        case.revision_of = case.current_version
        case.revised_by = user
        case.revision_justifications = {}
        case.revision_key = uuid.uuid4().hex
        case.save()
        AuditEvent.objects.create(
            case=case,
            actor=user,
            at=timezone.now(),
            action=AuditAction.STATUS_CHANGED,
            path="status",
            before=CaseStatus.ACCEPTED,
            after=CaseStatus.DRAFT,
            reason=f"revision of version {case.revision_of} opened",
            context=current_context(),
        )
    return case


def revision_discard(*, case: Case, user) -> Case:
    """Drop an unsubmitted revision: the case returns to its accepted version."""
    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if not (case.revision_of and can_edit(case, user)):
            raise PermissionDenied("only the author discards their own open revision")
        restore_accepted(case, user, reason="revision discarded")
    return case


def restore_accepted(case: Case, user, *, reason: str, justification: str = "") -> None:
    """Put the accepted version's content back in the working copy (the revision ends)."""
    content = base_content(case)
    before_status = case.status
    for name, value in canonical.fields_from_content(content).items():
        setattr(case, name, value)
    _, case.content_hash = canonical.hash_content(canonical.content_of_case(case))
    case.status = CaseStatus.ACCEPTED
    case.revision_of = None
    case.revised_by = None
    case.retire_requested = False
    case.revision_justifications = {}
    case.revision_key = ""
    case.save()
    AuditEvent.objects.create(
        case=case,
        actor=user,
        at=timezone.now(),
        action=AuditAction.STATUS_CHANGED,
        path="status",
        before=before_status,
        after=CaseStatus.ACCEPTED,
        version=case.current_version,
        reason=reason,
        justification=justification,
        context=current_context(),
    )


def retirement_request(*, case: Case, user, justification: str) -> Case:
    """Ask to retire an accepted case. A relaxation: it needs a justification and a review."""
    if not roles.can_propose(user):
        raise PermissionDenied("only experts and leads ask to retire cases")
    if not justification.strip():
        raise CaseProblems([validation.FieldError("justification", "say why this case should be retired")])
    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if case.status != CaseStatus.ACCEPTED:
            raise PermissionDenied(f"only an accepted case can be retired; this one is {case.status}")
        case.revision_of = case.current_version
        case.revised_by = user
        case.revision_key = uuid.uuid4().hex
        case.retire_requested = True
        case.revision_justifications = {"status": justification.strip()}
        _to_review(case, user, justification=justification.strip())
    return case
