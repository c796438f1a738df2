"""Access helpers shared by the views: one per object, as the services expect."""

from __future__ import annotations

import re

from django.http import Http404, HttpRequest

from cases import roles
from cases.models import Case, CaseStatus


def int_param(value: str | None) -> int | None:
    """A query or form value as a small non-negative integer, or None (never an exception)."""
    value = (value or "").strip()
    return int(value) if re.fullmatch(r"[0-9]{1,9}", value) else None


def require_member(request: HttpRequest) -> None:
    """People without a role see nothing: 404, so they learn nothing either."""
    if not roles.role_names(request.user):
        raise Http404("no such page")


def _get_case_for_user(request: HttpRequest, slug: str) -> tuple[Case, bool]:
    """(case, can_write) for the signed-in user; 404 for outsiders."""
    require_member(request)
    try:
        case = Case.objects.select_related("proposer").get(slug=slug)
    except Case.DoesNotExist as exc:
        raise Http404("no such case") from exc
    can_write = case.proposer_id == request.user.pk and case.status in (
        CaseStatus.DRAFT,
        CaseStatus.CHANGES_REQUESTED,
    )
    return case, can_write
