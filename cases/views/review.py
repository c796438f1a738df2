"""The review queue and the review page with the five-item checklist."""

from __future__ import annotations

import base64
import json
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from cases import roles
from cases.models import Case, CaseStatus, CheckRun, Decision, LeakFinding, SourceKind, Stratum, Verdict
from cases.services import checks
from cases.services import review as review_service
from cases.services.review import AlreadyDecided, DecisionRefused, Marks
from cases.views.access import _get_case_for_user, int_param

PAGE_SIZE = 25
SORTS = {
    "updated": ("-updated_at", "-id"),
    "oldest": ("updated_at", "id"),
    "id": ("slug", "id"),
}


def _require_reviewer(request) -> None:
    if not roles.can_review(request.user):
        if not roles.role_names(request.user):
            raise Http404("no such page")
        raise PermissionDenied("only reviewers and leads review cases")


def _encode_cursor(values: list) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def _decode_cursor(token: str) -> list | None:
    try:
        return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, TypeError):
        return None


def _valid_cursor(cursor, field: str) -> list | None:
    """A cursor of the right shape for the sort field, or None (start from the top)."""
    if (
        not isinstance(cursor, list)
        or len(cursor) != 2
        or not isinstance(cursor[1], int)
        or isinstance(cursor[1], bool)
    ):
        return None
    value = cursor[0]
    if field == "updated_at":
        try:
            value = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            return None
        if value.tzinfo is None:
            return None
    elif not isinstance(value, str):
        return None
    return [value, cursor[1]]


@login_required
def queue(request):
    """Proposals to review, filtered and sorted, paginated by keyset so any page is as
    cheap as the first. A reviewer's own proposals are never offered to them."""
    _require_reviewer(request)
    params = request.GET
    status = params.get("status", CaseStatus.PROPOSED)
    cases = (
        Case.objects.exclude(proposer=request.user)
        .exclude(revised_by=request.user)
        .select_related("proposer")
        .annotate(leaked=Exists(LeakFinding.objects.filter(case=OuterRef("pk"), cleared_by__isnull=True)))
    )
    if status in CaseStatus.values:
        cases = cases.filter(status=status)
    if tag := params.get("tag", "").strip():
        cases = cases.filter(tags__contains=[tag])
    stratum = None
    if (stratum_id := int_param(params.get("stratum"))) is not None:
        stratum = Stratum.objects.filter(pk=stratum_id).first()
        if stratum:
            cases = cases.filter(tags__contains=stratum.tags)
    if (source := params.get("source", "")) in SourceKind.values:
        cases = cases.filter(source_kind=source)
    if proposer := params.get("proposer", "").strip():
        cases = cases.filter(proposer__username=proposer)
    if q := params.get("q", "").strip():
        cases = cases.filter(Q(question__icontains=q) | Q(slug__icontains=q))
    verdict = params.get("verdict", "")
    if verdict in Verdict.values or verdict == "none":
        current = CheckRun.objects.filter(case=OuterRef("pk"), content_hash=OuterRef("content_hash"))
        if verdict == "none":
            cases = cases.exclude(Exists(current))
        else:
            cases = cases.filter(Exists(current.filter(verdict=verdict)))
    sort = params.get("sort", "updated") if params.get("sort") in SORTS else "updated"
    first, second = SORTS[sort]
    field, descending = first.lstrip("-"), first.startswith("-")
    cursor = _valid_cursor(_decode_cursor(params.get("after", "")), field) if params.get("after") else None
    if cursor:
        # Keyset: rows strictly after the last one shown, as one row comparison so
        # PostgreSQL starts the index scan at the cursor (an OR of two conditions
        # would make it read and discard every earlier row).
        op = "<" if descending else ">"
        cases = cases.extra(where=[f'("cases_case"."{field}", "cases_case"."id") {op} (%s, %s)'], params=cursor)
    page = list(
        cases.order_by(first, second).only(
            "slug", "question", "tags", "status", "source_kind", "updated_at", "content_hash", "proposer__username"
        )[: PAGE_SIZE + 1]
    )
    has_next = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    current_hash = {c.pk: c.content_hash for c in page}
    verdicts: dict[int, str] = {}
    for case_id, content_hash, verdict, state in (
        CheckRun.objects.filter(case__in=list(current_hash))
        .order_by("case_id", "-created_at", "-id")
        .values_list("case_id", "content_hash", "verdict", "state")
    ):
        if case_id not in verdicts and content_hash == current_hash[case_id]:
            verdicts[case_id] = verdict or state
    next_after = ""
    if has_next and page:
        last = page[-1]
        key = getattr(last, field)
        next_after = _encode_cursor([key.isoformat() if hasattr(key, "isoformat") else key, last.pk])
    query = params.copy()
    query.pop("after", None)
    return render(
        request,
        "cases/queue.html",
        {
            "cases": page,
            "verdicts": verdicts,
            "next_after": next_after,
            "query": query.urlencode(),
            "params": params,
            "status": status,
            "statuses": CaseStatus.choices,
            "strata": Stratum.objects.all(),
            "sources": SourceKind.values,
            "verdict_choices": Verdict.values,
            "sort": sort,
        },
    )


def _review_context(request, case: Case, **extra) -> dict:
    items = review_service.gather(case)
    return {
        "case": case,
        "items": items,
        "item_list": [items[n] for n in sorted(items)],
        "can_decide": review_service.can_decide(case, request.user) and case.status == CaseStatus.PROPOSED,
        "is_proposer": case.proposer_id == request.user.pk,
        "decisions": Decision.choices,
        "reviews": case.reviews.select_related("reviewer").order_by("-created_at")[:20],
        "leaks": case.leaks.filter(cleared_by__isnull=True).select_related("artifact"),
        **extra,
    }


@login_required
def review_page(request, slug: str):
    _require_reviewer(request)
    case, _ = _get_case_for_user(request, slug)
    return render(request, "cases/review.html", _review_context(request, case))


@login_required
def check_panel(request, slug: str):
    """The discrimination check, live while it runs (htmx polls this partial)."""
    _require_reviewer(request)
    case, _ = _get_case_for_user(request, slug)
    items = review_service.gather(case)
    response = render(request, "cases/review.html#check", {"case": case, "items": items, "item": items[2]})
    check = items[2].evidence["check"]
    if request.htmx and check and check["finished"]:
        # Tell the other panels the verdict is in, and stop polling.
        stop = HttpResponseStopPolling(response.content)
        return trigger_client_event(stop, "check-finished")
    return response


@login_required
@require_POST
def check_rerun(request, slug: str):
    _require_reviewer(request)
    case, _ = _get_case_for_user(request, slug)
    try:
        checks.check_request(case=case, user=request.user, rerun=True)
    except checks.NoTarget as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "The discrimination check runs again.")
    return redirect("cases:review", slug=case.slug)


def _marks_from_post(post, n_expectations: int) -> Marks:
    return Marks(
        required={i: post.get(f"required-{i}") == "on" for i in range(n_expectations)},
        volatility_ok={"pass": True, "fail": False}.get(post.get("item-4", "")),
        overrides={n: post.get(f"override-{n}", "") for n in (2, 3, 5) if post.get(f"override-{n}", "").strip()},
    )


@login_required
@require_POST
def decide(request, slug: str):
    _require_reviewer(request)
    case, _ = _get_case_for_user(request, slug)
    round_ = int_param(request.POST.get("round"))
    round_ = -1 if round_ is None else round_
    try:
        review = review_service.review_decide(
            case=case,
            user=request.user,
            decision=request.POST.get("decision", ""),
            comment=request.POST.get("comment", ""),
            round=round_,
            content_hash=request.POST.get("content_hash", ""),
            marks=_marks_from_post(request.POST, len(case.expectations)),
        )
    except AlreadyDecided as exc:
        messages.warning(request, str(exc))
        return redirect("cases:detail", slug=case.slug)
    except DecisionRefused as exc:
        context = _review_context(request, case, decision_problems=exc.problems, posted=request.POST)
        return render(request, "cases/review.html", context, status=400)
    label = {
        "approve": f"approved as version {review.version}",
        "request-changes": "sent back for changes",
        "reject": "rejected",
    }[review.decision]
    messages.success(request, f"{case.slug} {label}.")
    return redirect("cases:detail", slug=case.slug)
