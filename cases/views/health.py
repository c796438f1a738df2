"""The golden set's own health: near-duplicate questions and leakage into prompt artifacts."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from cases.models import Case, LeakFinding, PromptArtifact
from cases.services import leaks
from cases.views.access import require_member
from cases.views.manage import _require_lead

INLINE_LIMIT = 5000
REPORT_KEY = "near-duplicates-report"


def near_duplicate_report() -> dict:
    """Groups of near-duplicate questions over every case, with synthetic groups flagged."""
    from cases import neardup

    rows = list(Case.objects.order_by("slug").values_list("slug", "question", "source_kind"))
    pairs = neardup.find_near_duplicates(
        [(slug, q) for slug, q, _ in rows], threshold=settings.NEAR_DUPLICATE_THRESHOLD
    )
    groups = neardup.group_pairs(pairs)
    sources = {slug: source for slug, _, source in rows}
    flagged = neardup.flag_synthetic(groups, sources)
    return {
        "at": timezone.now().isoformat(),
        "cases": len(rows),
        "pairs": [(p.a, p.b, round(p.score, 1)) for p in pairs[:2000]],
        "pair_count": len(pairs),
        "groups": groups[:500],
        "group_count": len(groups),
        "synthetic": [list(g) if not isinstance(g, list) else g for g in flagged][:200],
        "threshold": settings.NEAR_DUPLICATE_THRESHOLD,
    }


@login_required
def duplicates(request):
    require_member(request)
    report = cache.get(REPORT_KEY)
    if report is None and Case.objects.count() <= INLINE_LIMIT:
        report = near_duplicate_report()
        cache.set(REPORT_KEY, report, 600)
    return render(request, "cases/duplicates.html", {"report": report})


@login_required
@require_POST
def duplicates_refresh(request):
    _require_lead(request)
    from cases.tasks import near_duplicates

    cache.delete(REPORT_KEY)
    near_duplicates.delay()
    messages.success(request, "The near-duplicate report is being recomputed.")
    return redirect("cases:duplicates")


@login_required
def leakage_page(request):
    require_member(request)
    if request.method == "POST":
        _require_lead(request)
        upload = request.FILES.get("file")
        if upload is None:
            messages.error(request, "file: choose an artifact to upload")
        else:
            try:
                leaks.artifact_upload(
                    user=request.user,
                    name=request.POST.get("name") or upload.name,
                    kind=request.POST.get("kind", "other"),
                    data=upload.read(),
                )
            except leaks.ArtifactRefused as exc:
                messages.error(request, f"{upload.name}: {exc}")
            else:
                messages.success(request, f"{upload.name} registered; every case is being scanned against it.")
        return redirect("cases:leakage")
    return render(
        request,
        "cases/leakage.html",
        {
            "artifacts": PromptArtifact.objects.defer("text").select_related("uploaded_by"),
            "findings": LeakFinding.objects.select_related("case", "artifact", "cleared_by").order_by(
                "cleared_at", "case__slug"
            )[:500],
            "kinds": PromptArtifact._meta.get_field("kind").choices,
        },
    )


@login_required
@require_POST
def leak_clear(request, pk: int):
    _require_lead(request)
    finding = get_object_or_404(LeakFinding, pk=pk)
    try:
        leaks.leak_clear(finding=finding, user=request.user, reason=request.POST.get("reason", ""))
    except leaks.ArtifactRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{finding.case.slug} cleared.")
    return redirect("cases:leakage")


@login_required
@require_POST
def leak_rescan(request):
    _require_lead(request)
    from cases.tasks import scan_leaks

    scan_leaks.delay(None)
    messages.success(request, "Every case is being scanned again.")
    return redirect("cases:leakage")
