"""The relaxed-assertion audit: relaxations and overrides with their whys, justifications
and approvers, for the lead audit page and ``manage.py audit_report``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from cases.models import AuditEvent, Classification, Decision, Review, Stratum


def quarter_start(today: date) -> date:
    return date(today.year, 3 * ((today.month - 1) // 3) + 1, 1)


@dataclass
class AuditRow:
    event: AuditEvent
    why: str
    approver: str | None
    acknowledged_by: str | None

    def to_dict(self) -> dict[str, Any]:
        e = self.event
        return {
            "id": e.pk,
            "caseId": e.case.slug,
            "version": e.version,
            "previousVersion": (e.version - 1) if e.version and e.version > 1 else None,
            "action": e.action,
            "path": e.path,
            "classification": e.classification,
            "reason": e.reason,
            "why": self.why,
            "justification": e.justification,
            "before": e.before,
            "after": e.after,
            "actor": e.actor.get_username() if e.actor else None,
            "approver": self.approver,
            "acknowledgedBy": self.acknowledged_by,
            "at": e.at.isoformat(),
        }


def audit_events(
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    relaxed_only: bool = True,
    case: str = "",
    editor: str = "",
    stratum: Stratum | None = None,
) -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.select_related("case", "actor", "acknowledgement__lead").order_by("-at", "-id")
    if relaxed_only:
        events = events.filter(classification=Classification.RELAXING)
    else:
        events = events.exclude(classification="")
    if since:
        events = events.filter(at__gte=since)
    if until:
        events = events.filter(at__lt=until)
    if case:
        events = events.filter(case__slug=case)
    if editor:
        events = events.filter(actor__username=editor)
    if stratum:
        events = events.filter(case__tags__contains=stratum.tags)
    return events


def audit_rows(events) -> list[AuditRow]:
    events = list(events)
    reviews = list(
        Review.objects.filter(case_id__in={e.case_id for e in events}, decision=Decision.APPROVE).select_related(
            "reviewer"
        )
    )
    # A revision's events belong to the review that accepted that revision; only
    # changes made outside a revision fall back to the version they led to.
    by_revision = {
        r.checklist.get("revision"): r.reviewer.get_username() for r in reviews if r.checklist.get("revision")
    }
    by_version = {(r.case_id, r.version): r.reviewer.get_username() for r in reviews if not r.checklist.get("revision")}
    rows = []
    for e in events:
        if e.context.get("approved_by"):
            approver = _username(e.context["approved_by"])
        elif e.context.get("revision"):
            approver = by_revision.get(e.context["revision"])
        elif e.context.get("review"):
            approver = next((r.reviewer.get_username() for r in reviews if r.pk == e.context["review"]), None)
        else:
            approver = by_version.get((e.case_id, e.version))
        ack = getattr(e, "acknowledgement", None)
        rows.append(
            AuditRow(
                event=e,
                why=e.context.get("why") or (e.before.get("why", "") if isinstance(e.before, dict) else ""),
                approver=approver,
                acknowledged_by=ack.lead.get_username() if ack else None,
            )
        )
    return rows


def _username(user_id: int) -> str | None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(pk=user_id).first()
    return user.get_username() if user else None


def weekly_counts(events, since: date, until: date) -> list[tuple[date, int]]:
    """Relaxations per week (weeks start on Monday), zeros included, so drift shows."""
    start = since - timedelta(days=since.weekday())
    weeks: dict[date, int] = {}
    day = start
    while day <= until:
        weeks[day] = 0
        day += timedelta(days=7)
    for at in events.values_list("at", flat=True):
        local = timezone.localtime(at).date()
        week = local - timedelta(days=local.weekday())
        if week in weeks:
            weeks[week] += 1
    return sorted(weeks.items())


def bar_chart_svg(points: list[tuple[date, int]], width: int = 720, height: int = 160) -> dict[str, Any]:
    """Geometry for a server-drawn bar chart (rendered by the template as inline SVG)."""
    top = max([n for _, n in points] + [1])
    n = max(len(points), 1)
    gap = 4
    bar_w = max(4, (width - gap * (n + 1)) // n)
    bars = []
    for i, (week, count) in enumerate(points):
        h = int((height - 30) * count / top)
        bars.append(
            {
                "x": gap + i * (bar_w + gap),
                "y": height - 20 - h,
                "w": bar_w,
                "h": h,
                "count": count,
                "label": week.strftime("%d %b"),
            }
        )
    return {"width": width, "height": height, "bars": bars, "top": top}
