"""Leads' pages: strata and targets (with "check every proposed case")."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from cases import roles
from cases.forms import TargetForm
from cases.models import Case, CaseStatus, CheckRun, CheckState, Stratum, Target
from cases.services import checks
from cases.services.strata import stratum_save
from cases.views.access import int_param


def _require_lead(request) -> None:
    if not roles.is_lead(request.user):
        if not roles.role_names(request.user):
            raise Http404("no such page")
        raise PermissionDenied("only leads manage this")


class StratumForm(forms.ModelForm):
    tags = forms.CharField(help_text="tags a case must all carry, comma-separated")

    class Meta:
        model = Stratum
        fields = ["name", "tags", "description", "min_cases"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["tags"] = ", ".join(self.instance.tags)

    def clean_tags(self):
        tags = [t.strip() for t in self.cleaned_data["tags"].split(",") if t.strip()]
        if not tags:
            raise ValidationError("give at least one tag")
        return tags


def _strata_rows():
    rows = []
    for stratum in Stratum.objects.order_by("name"):
        accepted = Case.objects.filter(status=CaseStatus.ACCEPTED, tags__contains=stratum.tags).count()
        proposed = Case.objects.filter(status=CaseStatus.PROPOSED, tags__contains=stratum.tags).count()
        rows.append(
            {"stratum": stratum, "accepted": accepted, "proposed": proposed, "too_few": accepted < stratum.min_cases}
        )
    return rows


@login_required
def strata(request):
    _require_lead(request)
    form = StratumForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        stratum_save(stratum=form.save(commit=False), user=request.user)
        messages.success(request, f"Stratum {form.instance.name} saved.")
        return redirect("cases:strata")
    return render(
        request, "cases/strata.html", {"rows": _strata_rows(), "form": form}, status=400 if form.errors else 200
    )


@login_required
def stratum_edit(request, pk: int):
    _require_lead(request)
    stratum = get_object_or_404(Stratum, pk=pk)
    form = StratumForm(request.POST or None, instance=stratum)
    if request.method == "POST" and form.is_valid():
        stratum_save(stratum=form.save(commit=False), user=request.user)
        messages.success(request, f"Stratum {stratum.name} saved.")
        return redirect("cases:strata")
    return render(
        request, "cases/stratum_edit.html", {"form": form, "stratum": stratum}, status=400 if form.errors else 200
    )


@login_required
def targets(request):
    _require_lead(request)
    form = TargetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        checks.target_save(target=form.save(commit=False), user=request.user)
        messages.success(request, f"Target {form.instance.name} registered.")
        return redirect("cases:targets")
    return render(
        request,
        "cases/targets.html",
        {
            "targets": Target.objects.order_by("name"),
            "form": form,
            "proposed": Case.objects.filter(status=CaseStatus.PROPOSED).count(),
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def check_all_proposed(request):
    _require_lead(request)
    target = Target.objects.filter(pk=int_param(request.POST.get("target")) or 0).first()
    try:
        runs = checks.checks_request_all_proposed(user=request.user, target=target)
    except checks.NoTarget as exc:
        messages.error(request, str(exc))
        return redirect("cases:targets")
    request.session["check_all"] = [run.pk for run in runs]
    messages.success(request, f"Checking {len(runs)} proposed case(s).")
    return redirect("cases:targets")


@login_required
def check_all_progress(request):
    _require_lead(request)
    ids = request.session.get("check_all", [])
    runs = CheckRun.objects.filter(pk__in=ids)
    total = len(ids)
    finished = runs.filter(state__in=[CheckState.DONE, CheckState.ERROR]).count()
    by_verdict = {}
    for verdict in runs.exclude(verdict="").values_list("verdict", flat=True):
        by_verdict[verdict] = by_verdict.get(verdict, 0) + 1
    response = render(
        request,
        "cases/targets.html#progress",
        {"total": total, "finished": finished, "by_verdict": sorted(by_verdict.items())},
    )
    if request.htmx and finished >= total:
        return HttpResponseStopPolling(response.content)
    return response
