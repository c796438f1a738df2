import json

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from cases import canonical, relaxation, roles
from cases.models import Case, CaseStatus
from cases.services.review import current_check
from cases.views.access import _get_case_for_user, int_param, require_member

PAGE_SIZE = 50


@login_required
def case_list(request):
    require_member(request)
    cases = Case.objects.only("slug", "question", "tags", "status", "updated_at", "current_version")
    status = request.GET.get("status", "")
    if status in CaseStatus.values:
        cases = cases.filter(status=status)
    after = request.GET.get("after", "")
    if after:
        # Keyset pagination by id: the page after ``after`` costs the same at any depth.
        cases = cases.filter(slug__gt=after)
    page = list(cases.order_by("slug")[: PAGE_SIZE + 1])
    has_next = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    return render(
        request,
        "cases/list.html",
        {
            "cases": page,
            "status": status,
            "statuses": CaseStatus.choices,
            "next_after": page[-1].slug if has_next else "",
        },
    )


def version_diff(case, a: int, b: int) -> dict | None:
    """Side by side: the expectations, tags and invariant flag of two versions."""
    versions = {v.number: v for v in case.versions.filter(number__in=[a, b])}
    if a not in versions or b not in versions:
        return None
    left, right = (json.loads(versions[n].canonical_json) for n in (a, b))
    changes = relaxation.diff_contents(left, right)
    changed_paths = {c.path for c in changes}
    width = max(len(left["expectations"]), len(right["expectations"]))
    rows = [
        {
            "index": i,
            "left": left["expectations"][i] if i < len(left["expectations"]) else None,
            "right": right["expectations"][i] if i < len(right["expectations"]) else None,
            "changed": f"expectations[{i}]" in changed_paths,
        }
        for i in range(width)
    ]
    return {"a": a, "b": b, "left": left, "right": right, "rows": rows, "changes": changes}


@login_required
def case_detail(request, slug: str):
    case, can_write = _get_case_for_user(request, slug)
    content = canonical.content_of_case(case)
    versions = list(case.versions.select_related("accepted_by").order_by("-number"))
    diff = None
    a, b = int_param(request.GET.get("a")), int_param(request.GET.get("b"))
    if a is not None and b is not None:
        diff = version_diff(case, a, b)
    elif len(versions) >= 2:
        diff = version_diff(case, versions[1].number, versions[0].number)
    return render(
        request,
        "cases/detail.html",
        {
            "case": case,
            "can_write": can_write,
            "can_review": roles.can_review(request.user),
            "can_propose": roles.can_propose(request.user),
            "content_json": json.dumps(content, indent=2, ensure_ascii=False),
            "versions": versions,
            "diff": diff,
            "reviews": case.reviews.select_related("reviewer").order_by("-created_at"),
            "events": case.audit_events.select_related("actor")[:100],
            "check": current_check(case),
            "leaks": case.leaks.filter(cleared_by__isnull=True).select_related("artifact"),
        },
    )
