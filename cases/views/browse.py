import json

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from cases import canonical
from cases.models import Case, CaseStatus
from cases.views.access import _get_case_for_user, require_member

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


@login_required
def case_detail(request, slug: str):
    case, can_write = _get_case_for_user(request, slug)
    content = canonical.content_of_case(case)
    return render(
        request,
        "cases/detail.html",
        {
            "case": case,
            "can_write": can_write,
            "content_json": json.dumps(content, indent=2, ensure_ascii=False),
            "versions": case.versions.select_related("accepted_by").order_by("-number"),
            "events": case.audit_events.select_related("actor")[:100],
        },
    )
