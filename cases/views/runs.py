"""Eval runs of releases, their comparison, and the coverage dashboard."""

from __future__ import annotations

from collections import Counter

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect, render
from django_htmx.http import HttpResponseStopPolling

from cases import checklist, roles
from cases.models import Case, CaseStatus, EvalResult, EvalRun, Release, RunState, SourceKind, Stratum, Target
from cases.services import evals
from cases.views.access import int_param, require_member
from cases.views.review import _require_reviewer


@login_required
def run_list(request):
    require_member(request)
    if request.method == "POST":
        _require_reviewer(request)
        release = Release.objects.filter(pk=int_param(request.POST.get("release")) or 0).first()
        target = Target.objects.filter(pk=int_param(request.POST.get("target")) or 0).first()
        if release is None or target is None:
            messages.error(request, "choose a release and a target")
            return redirect("cases:runs")
        run = evals.eval_start(release=release, target=target, user=request.user)
        return redirect("cases:run", pk=run.pk)
    return render(
        request,
        "cases/runs.html",
        {
            "runs": EvalRun.objects.select_related("target", "requested_by")[:100],
            "releases": Release.objects.all(),
            "targets": Target.objects.all(),
            "can_start": roles.can_review(request.user),
        },
    )


@login_required
def run_detail(request, pk: int):
    require_member(request)
    run = get_object_or_404(EvalRun.objects.select_related("target", "release"), pk=pk)
    failing = EvalResult.objects.filter(run=run, invariant=False).filter(Q(passed=False) | Q(passed__isnull=True))
    invariants = EvalResult.objects.filter(run=run, invariant=True).order_by("passed", "case_slug")
    context = {
        "run": run,
        "data": evals.run_json(run),
        "failing": failing[:200],
        "invariants": invariants,
        "others": EvalRun.objects.filter(release=run.release).exclude(pk=run.pk)[:20],
    }
    if request.htmx and request.GET.get("panel") == "progress":
        response = render(request, "cases/run.html#progress", context)
        if run.state in (RunState.DONE, RunState.ERROR):
            return HttpResponseStopPolling(response.content)
        return response
    return render(request, "cases/run.html", context)


@login_required
def run_compare(request):
    require_member(request)
    a = get_object_or_404(EvalRun, pk=int_param(request.GET.get("a")) or 0)
    b = get_object_or_404(EvalRun, pk=int_param(request.GET.get("b")) or 0)
    try:
        flipped = evals.compare_runs(a, b)
        refusal = None
    except evals.NotComparable as exc:
        flipped, refusal = None, str(exc)
    return render(request, "cases/compare.html", {"a": a, "b": b, "flipped": flipped, "refusal": refusal}, status=200)


SOURCE_ORDER = ["trace", "ticket", "bug-report", "known-hard", "expert", "synthetic", ""]


def _should_refuse(expectations: list[dict], tags: list[str]) -> bool:
    for exp in expectations:
        value = exp.get("value") if isinstance(exp.get("value"), dict) else {}
        if exp.get("kind") == "behaviour" and (value.get("abstains") or value.get("asksClarification")):
            return True
    return bool({"refusal", "out-of-scope", "clarification"} & set(tags))


@login_required
def coverage(request):
    """The golden set's shape: strata, sources, should-refuse and invariant shares, tags."""
    require_member(request)
    cases = list(
        Case.objects.filter(status=CaseStatus.ACCEPTED).values_list("tags", "source_kind", "invariant", "expectations")
    )
    strata = list(Stratum.objects.order_by("name"))
    per_stratum = Counter()
    unplaced = 0
    for tags, *_ in cases:
        matched = checklist.matching_strata(tags, [(s.name, s.tags) for s in strata])
        for name in matched:
            per_stratum[name] += 1
        unplaced += not matched
    total = len(cases)
    sources = Counter(source or "" for _, source, _, _ in cases)
    tags = Counter(tag for t, *_ in cases for tag in t)
    refuse = sum(_should_refuse(exps, t) for t, _, _, exps in cases)
    invariants = sum(1 for _, _, inv, _ in cases if inv)

    def chart(pairs):
        return bar_chart_horizontal([(label or "(none)", n) for label, n in pairs])

    strata_rows = [
        {"stratum": s, "count": per_stratum[s.name], "too_few": per_stratum[s.name] < s.min_cases} for s in strata
    ]
    return render(
        request,
        "cases/coverage.html",
        {
            "total": total,
            "strata_chart": chart([(r["stratum"].name, r["count"]) for r in strata_rows]),
            "strata_rows": strata_rows,
            "unplaced": unplaced,
            "source_chart": chart(
                [(s, sources.get(s, 0)) for s in SOURCE_ORDER if s in sources or s in SourceKind.values]
            ),
            "tag_chart": chart(tags.most_common(25)),
            "refuse": refuse,
            "refuse_share": round(100 * refuse / total, 1) if total else 0,
            "invariants": invariants,
            "invariant_share": round(100 * invariants / total, 1) if total else 0,
        },
    )


def bar_chart_horizontal(pairs: list[tuple[str, int]], width: int = 560, row: int = 22) -> dict:
    top = max([n for _, n in pairs] + [1])
    label_w = 170
    bars = [
        {"y": i * row, "w": int((width - label_w - 40) * n / top), "label": label, "count": n, "x": label_w}
        for i, (label, n) in enumerate(pairs)
    ]
    return {"width": width, "height": max(row, row * len(pairs)), "bars": bars, "row": row}
