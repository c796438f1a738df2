from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from cases import roles
from cases.models import Case, CaseStatus


@login_required
def home(request):
    user = request.user
    names = roles.role_names(user)
    context = {"has_role": bool(names)}
    if names & {roles.EXPERT, roles.LEAD}:
        mine = Case.objects.filter(proposer=user).only("slug", "question", "status", "updated_at")
        context["my_drafts"] = mine.filter(status=CaseStatus.DRAFT)[:20]
        context["changes_requested"] = mine.filter(status=CaseStatus.CHANGES_REQUESTED)[:20]
    if names & {roles.REVIEWER, roles.LEAD}:
        context["to_review"] = (
            Case.objects.filter(status=CaseStatus.PROPOSED)
            .exclude(proposer=user)
            .only("slug", "question", "status", "updated_at")[:20]
        )
    if roles.LEAD in names:
        from cases.models import AuditEvent, Classification

        context["to_audit"] = (
            AuditEvent.objects.filter(classification=Classification.RELAXING, acknowledgement__isnull=True)
            .select_related("case", "actor")
            .order_by("-at")[:20]
        )
    return render(request, "cases/home.html", context)
