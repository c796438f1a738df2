"""Leads' audit of relaxed assertions, releases, and API tokens for scripts."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from cases import canonical, roles
from cases.models import AuditEvent, Release, Stratum
from cases.services import audit_report, releases, tokens
from cases.services.audit import audit_acknowledge
from cases.services.lifecycle import CaseProblems, case_update, revision_start
from cases.views.access import int_param, require_member
from cases.views.manage import _require_lead


def _parse_date(value: str) -> date | None:
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except (TypeError, ValueError):
        return None


@login_required
def audit_page(request):
    """Relaxations and overrides by period (default: this quarter), case, editor, stratum."""
    _require_lead(request)
    today = timezone.localdate()
    since = _parse_date(request.GET.get("since", "")) or audit_report.quarter_start(today)
    until = _parse_date(request.GET.get("until", "")) or today
    stratum = Stratum.objects.filter(pk=int_param(request.GET.get("stratum")) or 0).first()
    events = audit_report.audit_events(
        since=timezone.make_aware(datetime.combine(since, datetime.min.time())),
        until=timezone.make_aware(datetime.combine(until + timedelta(days=1), datetime.min.time())),
        case=request.GET.get("case", "").strip(),
        editor=request.GET.get("editor", "").strip(),
        stratum=stratum,
    )
    chart = audit_report.bar_chart_svg(audit_report.weekly_counts(events, since, until))
    rows = audit_report.audit_rows(events[:300])
    return render(
        request,
        "cases/audit.html",
        {
            "rows": rows,
            "chart": chart,
            "since": since,
            "until": until,
            "strata": Stratum.objects.all(),
            "params": request.GET,
            "total": events.count(),
        },
    )


@login_required
@require_POST
def audit_ack(request, pk: int):
    _require_lead(request)
    event = get_object_or_404(AuditEvent, pk=pk)
    audit_acknowledge(event=event, user=request.user, note=request.POST.get("note", ""))
    messages.success(request, f"Acknowledged: {event.case.slug} {event.path}.")
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect("cases:audit")


def reverted_content(content: dict, event: AuditEvent) -> dict | None:
    """The content with one audited change undone, or None when it cannot be undone simply."""
    content = json.loads(json.dumps(content))
    expectations = content.setdefault("expectations", [])
    if event.path.startswith("expectations["):
        if event.action == "expectation-removed":
            expectations.append(event.before)
            return content
        if event.action == "expectation-modified" and event.after in expectations:
            expectations[expectations.index(event.after)] = event.before
            return content
        if event.action == "expectation-added" and event.after in expectations:
            expectations.remove(event.after)
            return content
        return None
    if event.path == "invariant":
        content["invariant"] = bool(event.before)
        return content
    if event.path == "tags":
        content["tags"] = list(event.before or [])
        return content
    return None


@login_required
@require_POST
def audit_revert(request, pk: int):
    """Open a revision of the case that undoes one relaxation (the lead then submits it)."""
    _require_lead(request)
    event = get_object_or_404(AuditEvent.objects.select_related("case"), pk=pk)
    case = event.case
    try:
        case = revision_start(case=case, user=request.user)
    except PermissionDenied as exc:
        messages.error(request, f"Cannot open a revision of {case.slug}: {exc}")
        return redirect("cases:audit")
    content = reverted_content(canonical.content_of_case(case), event)
    if content is None:
        messages.warning(request, f"A revision of {case.slug} is open; undo {event.path or event.action} by hand.")
        return redirect("cases:edit", slug=case.slug)
    try:
        case_update(case=case, user=request.user, content=content)
    except CaseProblems as exc:
        messages.warning(request, f"The revision is open; undo the change by hand ({exc}).")
        return redirect("cases:edit", slug=case.slug)
    messages.success(request, f"A revision of {case.slug} undoing {event.path or event.action} is open; submit it.")
    return redirect("cases:edit", slug=case.slug)


# -- releases -----------------------------------------------------------------------------


@login_required
def release_list(request):
    require_member(request)
    if request.method == "POST":
        _require_lead(request)
        try:
            release = releases.release_create(user=request.user, note=request.POST.get("note", ""))
        except releases.ReleaseRefused as exc:
            messages.error(request, "; ".join(exc.problems))
            return redirect("cases:releases")
        messages.success(request, f"Release {release.number} cut with {release.case_count} case(s).")
        return redirect("cases:release", number=release.number)
    included, held = releases.candidates() if roles.is_lead(request.user) else ([], [])
    return render(
        request,
        "cases/releases.html",
        {"releases": Release.objects.select_related("created_by"), "ready": len(included), "held": held},
    )


@login_required
def release_detail(request, number: int):
    require_member(request)
    release = get_object_or_404(Release, number=number)
    return render(request, "cases/release.html", {"release": release, "log": release.changelog})


def _release_download(release: Release) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        releases.release_lines(release), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="release-{release.number}.jsonl"'
    response["X-Content-SHA256"] = release.content_hash
    return response


@login_required
@require_GET
def release_download(request, number: int):
    require_member(request)
    return _release_download(get_object_or_404(Release, number=number))


@require_GET
def api_release(request, number: str):
    """Stable URL for scripts: ``/api/releases/<n>.jsonl`` or ``latest.jsonl``, with a
    personal token in ``Authorization: Bearer``."""
    user = tokens.user_for_token(request.headers.get("Authorization", ""))
    if user is None:
        response = HttpResponse(
            "a valid API token is required (Authorization: Bearer <token>)\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = "Bearer"
        return response
    if not roles.role_names(user):
        raise Http404("no such release")
    if number == "latest":
        release = Release.objects.order_by("-number").first()
    else:
        release = Release.objects.filter(number=int_param(number) or 0).first()
    if release is None:
        raise Http404("no such release")
    return _release_download(release)


@login_required
def token_page(request):
    require_member(request)
    secret = None
    if request.method == "POST":
        if request.POST.get("revoke"):
            request.user.api_tokens.filter(pk=int_param(request.POST["revoke"]) or 0).delete()
            messages.success(request, "Token revoked.")
            return redirect("cases:tokens")
        _, secret = tokens.token_create(user=request.user, name=request.POST.get("name", ""))
    return render(request, "cases/tokens.html", {"tokens": request.user.api_tokens.all(), "secret": secret})
