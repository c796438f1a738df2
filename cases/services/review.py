"""Reviewing a proposal against the five-item checklist, and deciding it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from cases import canonical, checklist, relaxation, roles
from cases.auditctx import current_context
from cases.models import (
    AuditAction,
    AuditEvent,
    Case,
    CaseStatus,
    CaseVersion,
    CheckRun,
    Classification,
    Decision,
    Review,
    Stratum,
)
from cases.scoring import compile_case
from cases.scoring_config import detector_config_from_settings
from cases.services import checks
from cases.services.lifecycle import restore_accepted, revision_changes
from cases.validation import validate_case


class AlreadyDecided(Exception):
    """Someone decided this submission first (or it changed since it was opened)."""

    def __init__(self, message: str, review: Review | None = None):
        super().__init__(message)
        self.review = review


class DecisionRefused(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass
class Marks:
    """What the reviewer said on the form."""

    required: dict[int, bool] = field(default_factory=dict)  # expectation index -> required?
    volatility_ok: bool | None = None  # item 4
    overrides: dict[int, str] = field(default_factory=dict)  # automatic item -> written reason


def can_decide(case: Case, user) -> bool:
    """Reviewers and leads decide; never on a case they proposed or are revising."""
    return roles.can_review(user) and user.pk not in (case.proposer_id, case.revised_by_id)


def strata_table() -> list[tuple[str, list[str]]]:
    return list(Stratum.objects.values_list("name", "tags"))


def check_summary(run: CheckRun | None, case: Case) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "id": run.pk,
        "state": run.state,
        "verdict": run.verdict,
        "finished": run.finished,
        "stale": checks.is_stale(run, case),
        "baseline_failed": run.baseline_failed,
        "error": run.error,
        "modes": run.modes,
        "results": run.results,
        "calls_done": run.calls_done,
        "calls_total": run.calls_total,
        "target": run.target.name,
    }


def current_check(case: Case) -> CheckRun | None:
    """The latest check of the case's current content (any target)."""
    return (
        CheckRun.objects.filter(case=case, content_hash=case.content_hash)
        .select_related("target")
        .order_by("-created_at", "-id")
        .first()
    )


def gather(case: Case, content: dict[str, Any] | None = None) -> dict[int, checklist.Item]:
    """The evidence for every item, for ``content`` (default: the case as stored)."""
    content = content if content is not None else canonical.content_of_case(case)
    try:
        compiled = compile_case(
            content.get("expectations", []),
            invariant=content.get("invariant", False),
            config=detector_config_from_settings(),
        )
    except ValueError:
        compiled = None
    phrasings = checklist.score_responses(compiled, content.get("phrasings", []))
    wrong = checklist.score_responses(compiled, content.get("wrongAnswers", []))
    pairs = checklist.pairwise_similarity(content.get("phrasings", []), settings.PHRASING_MAX_SIMILARITY)
    run = current_check(case) if case.pk else None
    expectations = content.get("expectations", [])
    texts = [("question", content.get("question", ""))] + [
        (f"expectation {i + 1}", str(e.get("value", ""))) for i, e in enumerate(expectations) if isinstance(e, dict)
    ]
    cited = [e["documentId"] for e in expectations if isinstance(e, dict) and e.get("kind") == "must-cite"]
    hints = checklist.volatility_hints(texts, cited)
    changes = revision_changes(case, content) if case.pk else []
    justifications = case.revision_justifications if case.pk else {}
    return {
        1: checklist.Item(
            1,
            None,
            f"{len(expectations)} expectation(s), each with its why",
            {
                "expectations": expectations,
                "changes": [
                    {
                        "path": c.path,
                        "classification": c.classification,
                        "reason": c.reason,
                        "why": c.why,
                        "justification": justifications.get(c.key, ""),
                    }
                    for c in changes
                ],
                "revision_of": case.revision_of if case.pk else None,
            },
        ),
        2: checklist.item_discrimination(check_summary(run, case), wrong),
        3: checklist.item_phrasings(phrasings, pairs),
        4: checklist.Item(
            4, None, f"{len(hints)} volatility hint(s)" if hints else "no volatility hints", {"hints": hints}
        ),
        5: checklist.item_strata(checklist.matching_strata(content.get("tags", []), strata_table())),
    }


def approval_problems(items: dict[int, checklist.Item], marks: Marks, n_expectations: int) -> list[str]:
    problems = []
    not_required = [str(i + 1) for i in range(n_expectations) if not marks.required.get(i)]
    if not_required:
        problems.append(f"item 1: expectation(s) {', '.join(not_required)} not marked required")
    if marks.volatility_ok is not True:
        problems.append("item 4: mark whether the case is independent of facts likely to change")
    for number in checklist.AUTOMATIC_ITEMS:
        if not items[number].passed and not marks.overrides.get(number, "").strip():
            problems.append(f"item {number}: {items[number].summary} (override it only with a written reason)")
    return problems


def review_decide(
    *,
    case: Case,
    user,
    decision: str,
    comment: str,
    round: int,
    content_hash: str,
    marks: Marks | None = None,
) -> Review:
    """Record one decision on one submission. A second decision on the same submission,
    by anyone, raises :class:`AlreadyDecided` and changes nothing."""
    marks = marks or Marks()
    if decision not in Decision.values:
        raise DecisionRefused([f"decision: {decision!r} is not one of {', '.join(Decision.values)}"])
    if not comment.strip():
        raise DecisionRefused(["comment: say why, for the proposer and for the record"])
    with transaction.atomic():
        case = Case.objects.select_for_update().get(pk=case.pk)
        if not can_decide(case, user):
            raise PermissionDenied("only reviewers and leads decide, and never on a case they proposed")
        existing = Review.objects.filter(case=case, round=round).first()
        if existing is not None or case.review_round != round or case.status != CaseStatus.PROPOSED:
            who = f" by {existing.reviewer.get_username()}" if existing else ""
            raise AlreadyDecided(f"this submission was already decided{who}; the case is now {case.status}", existing)
        if case.content_hash != content_hash:
            raise AlreadyDecided("the case changed since you opened it; reload to review the current content")
        if case.retire_requested:
            return _decide_retirement(case, user, decision, comment, round, content_hash)
        items = gather(case)
        if decision == Decision.APPROVE:
            problems = approval_problems(items, marks, len(case.expectations))
            problems += [f"content: {e}" for e in validate_case(canonical.content_of_case(case), draft=False)]
            if problems:
                raise DecisionRefused(problems)
        run = current_check(case)
        now, ctx = timezone.now(), current_context()
        review = Review.objects.create(
            case=case,
            round=round,
            reviewer=user,
            decision=decision,
            comment=comment.strip(),
            content_hash=content_hash,
            check_run=run,
            checklist={
                str(n): {
                    "passed": item.passed,
                    "summary": item.summary,
                    **({"override": marks.overrides[n]} if marks.overrides.get(n, "").strip() else {}),
                }
                for n, item in items.items()
            }
            | {"required": {str(k): v for k, v in marks.required.items()}, "volatility_ok": marks.volatility_ok}
            | ({"revision": case.revision_key} if case.revision_key else {}),
        )
        before = case.status
        version = None
        if decision == Decision.APPROVE:
            version = (case.current_version or 0) + 1
            text, digest = canonical.hash_content(canonical.content_of_case(case))
            CaseVersion.objects.create(
                case=case,
                number=version,
                canonical_json=text,
                content_hash=digest,
                accepted_by=user,
                accepted_at=now,
                review=review,
            )
            case.status, case.current_version = CaseStatus.ACCEPTED, version
            case.revision_of, case.revised_by, case.revision_justifications = None, None, {}
            case.revision_key = ""
            review.version = version
            review.save(update_fields=["version"])
        elif decision == Decision.REQUEST_CHANGES:
            case.status = CaseStatus.CHANGES_REQUESTED
        elif case.revision_of:
            # A rejected revision leaves the accepted version in force.
            restore_accepted(case, user, reason="revision rejected", justification=comment.strip())
            return review
        else:
            case.status = CaseStatus.REJECTED
        case.save()
        events = [
            AuditEvent(
                case=case,
                version=version,
                actor=user,
                at=now,
                action=AuditAction.STATUS_CHANGED,
                path="status",
                before=before,
                after=case.status,
                justification=comment.strip(),
                context=ctx | {"review": review.pk},
            )
        ]
        for number, reason in sorted(marks.overrides.items()):
            if reason.strip() and not items[number].passed and decision == Decision.APPROVE:
                events.append(
                    AuditEvent(
                        case=case,
                        version=version,
                        actor=user,
                        at=now,
                        action=AuditAction.OVERRIDE,
                        path=f"checklist[{number}]",
                        before={"passed": False, "summary": items[number].summary},
                        after={"passed": True},
                        classification=Classification.RELAXING,
                        reason=f"automatic checklist item {number} overridden",
                        justification=reason.strip(),
                        context=ctx | {"review": review.pk},
                    )
                )
        AuditEvent.objects.bulk_create(events)
    return review


def _decide_retirement(case: Case, user, decision: str, comment: str, round: int, content_hash: str) -> Review:
    """A retirement is approved or refused as a whole; the checklist does not apply."""
    if decision == Decision.REQUEST_CHANGES:
        raise DecisionRefused(["decision: a retirement is approved or rejected"])
    now, ctx = timezone.now(), current_context()
    review = Review.objects.create(
        case=case,
        round=round,
        reviewer=user,
        decision=decision,
        comment=comment.strip(),
        content_hash=content_hash,
        checklist={"retirement": True},
        version=case.current_version,
    )
    if decision == Decision.REJECT:
        restore_accepted(case, user, reason="retirement refused", justification=comment.strip())
        return review
    change = relaxation.retirement_change(CaseStatus.ACCEPTED)
    AuditEvent.objects.create(
        case=case,
        version=case.current_version,
        actor=case.revised_by,
        at=now,
        action=AuditAction.RETIRED,
        path="status",
        before=CaseStatus.ACCEPTED,
        after=CaseStatus.RETIRED,
        classification=change.classification,
        reason=change.reason,
        justification=case.revision_justifications.get("status", ""),
        context=ctx | {"review": review.pk, "approved_by": user.pk, "revision": case.revision_key},
    )
    case.status = CaseStatus.RETIRED
    case.revision_of, case.revised_by, case.retire_requested, case.revision_justifications = None, None, False, {}
    case.revision_key = ""
    case.save()
    return review
