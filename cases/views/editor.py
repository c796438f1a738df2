"""Proposing and editing a case. The page works as one plain form; htmx adds rows in
place and refreshes the live panels (scores, strata, similar cases) as the expert types."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from cases import canonical, checklist, roles
from cases.forms import content_from_post, editor_rows, errors_by_field
from cases.models import Case
from cases.services import review as review_service
from cases.services.lifecycle import (
    CaseProblems,
    can_edit,
    case_create,
    case_submit,
    case_update,
    retirement_request,
    revision_changes,
    revision_discard,
    revision_start,
    submission_problems,
)
from cases.similar import similar_questions
from cases.validation import EXPECTATION_KINDS, MATCH_MODES, SOURCE_KINDS, validate_case
from cases.views.access import _get_case_for_user, int_param

TEMPLATE = "cases/editor.html"

BLANK = {
    "id": "",
    "question": "",
    "tags": [],
    "expectations": [{"kind": "must-contain", "value": ""}],
    "phrasings": [{"answer": ""}, {"answer": ""}],
    "wrongAnswers": [{"answer": ""}],
}


def _context(content: dict, *, case: Case | None = None, errors: dict | None = None, **extra) -> dict:
    justifications = dict(case.revision_justifications) if case is not None else {}
    justifications.update(extra.pop("posted_justifications", {}))
    changes = revision_changes(case, content) if case is not None and case.revision_of else []
    return {
        "revision_changes": [
            {
                "path": c.path,
                "key": c.key,
                "classification": c.classification,
                "reason": c.reason,
                "why": c.why,
                "relaxing": c.relaxing,
                "justification": justifications.get(c.key, ""),
            }
            for c in changes
        ],
        "case": case,
        "form": editor_rows(content),
        "errors": errors or {},
        "kinds": EXPECTATION_KINDS,
        "match_modes": MATCH_MODES,
        "source_kinds": SOURCE_KINDS,
        **extra,
    }


def _require_proposer(request) -> None:
    if not roles.can_propose(request.user):
        if not roles.role_names(request.user):
            raise Http404("no such page")
        raise PermissionDenied("only experts and leads propose cases")


@login_required
def propose(request):
    _require_proposer(request)
    if request.method != "POST":
        return render(request, TEMPLATE, _context(BLANK))
    content = content_from_post(request.POST)
    if row := _row_action(request.POST):
        _apply_row_op(content, row[0], row[1], row[2], request.POST.get("kind", ""))
        return render(request, TEMPLATE, _context(content))
    try:
        case = case_create(user=request.user, content=content)
    except CaseProblems as exc:
        return render(request, TEMPLATE, _context(content, errors=errors_by_field(exc.problems)), status=400)
    if request.POST.get("action") == "submit":
        return _submit(request, case, content)
    messages.success(request, f"Draft {case.slug} saved.")
    return redirect("cases:edit", slug=case.slug)


@login_required
def edit(request, slug: str):
    case, _ = _get_case_for_user(request, slug)
    if not can_edit(case, request.user):
        raise PermissionDenied("only the proposer edits a case, and only while it is a draft or sent back")
    if request.method != "POST":
        return render(request, TEMPLATE, _context(canonical.content_of_case(case), case=case))
    content = content_from_post(request.POST, slug=case.slug)
    justifications = {k[len("justify-") :]: v for k, v in request.POST.items() if k.startswith("justify-")}
    if row := _row_action(request.POST):
        _apply_row_op(content, row[0], row[1], row[2], request.POST.get("kind", ""))
        return render(request, TEMPLATE, _context(content, case=case, posted_justifications=justifications))
    try:
        case = case_update(case=case, user=request.user, content=content, justifications=justifications)
    except CaseProblems as exc:
        return render(
            request,
            TEMPLATE,
            _context(
                content,
                case=case,
                errors=errors_by_field(exc.problems),
                posted_justifications=justifications,
                justify_problems=[str(p) for p in exc.problems if "justification" in p.message],
            ),
            status=400,
        )
    if request.POST.get("action") == "submit":
        return _submit(request, case, content)
    messages.success(request, "Draft saved.")
    return redirect("cases:edit", slug=case.slug)


def _submit(request, case: Case, content: dict):
    try:
        case_submit(case=case, user=request.user)
    except CaseProblems as exc:
        problems = submission_problems(case)
        return render(
            request,
            TEMPLATE,
            _context(
                content,
                case=case,
                errors=errors_by_field(exc.problems),
                submit_problems=[str(p) for p in problems],
            ),
            status=400,
        )
    messages.success(request, f"{case.slug} was submitted for review; its discrimination check is queued.")
    return redirect("cases:detail", slug=case.slug)


# -- htmx endpoints of the editor -----------------------------------------------------


@login_required
@require_POST
def editor_rows_view(request, section: str):
    """Add or remove a row of one list in place; the rest of the form is kept as typed."""
    _require_proposer(request)
    content = content_from_post(request.POST)
    key = {"expectations": "expectations", "phrasings": "phrasings", "wrong": "wrongAnswers"}.get(section)
    if key is None:
        raise Http404("no such section")
    _apply_row_op(content, key, request.POST.get("op", ""), request.POST.get("index", ""), request.POST.get("kind", ""))
    response = render(request, f"{TEMPLATE}#{section}", _context(content))
    return trigger_client_event(response, "rows-changed")


def _apply_row_op(content: dict, key: str, op: str, index: str, kind: str) -> None:
    items = content.setdefault(key, [])
    if op == "add":
        if key == "expectations":
            kind = kind if kind in EXPECTATION_KINDS else "must-contain"
            blank = {"kind": kind}
            blank |= {"value": {}} if kind == "behaviour" else {} if kind == "must-cite" else {"value": ""}
            items.append(blank)
        else:
            items.append({"answer": ""})
    elif op == "remove" and (i := int_param(index)) is not None and i < len(items):
        items.pop(i)


ROW_ACTIONS = {"exp": "expectations", "phr": "phrasings", "wrong": "wrongAnswers"}


def _row_action(post) -> tuple[str, str, str] | None:
    """The no-JavaScript form of the row buttons: ``add-exp``, ``remove-phr-2``..."""
    action = post.get("action", "")
    parts = action.split("-")
    if len(parts) >= 2 and parts[0] in ("add", "remove") and parts[1] in ROW_ACTIONS:
        return ROW_ACTIONS[parts[1]], parts[0], parts[2] if len(parts) > 2 else ""
    return None


@login_required
@require_POST
def editor_preview(request, panel: str):
    """The live panels: every phrasing and wrong answer scored, the strata, similar cases."""
    _require_proposer(request)
    slug = request.POST.get("slug") or None
    content = content_from_post(request.POST, slug=slug or "preview")
    if panel == "scores":
        problems = validate_case(content, draft=True)
        items = review_service.gather(Case(slug=content["id"]), content)
        return render(
            request,
            f"{TEMPLATE}#scores",
            {
                "phrasing_rows": items[3].evidence["phrasings"],
                "pairs": items[3].evidence["pairs"],
                "wrong_rows": items[2].evidence["wrong"],
                "expectation_problems": [str(p) for p in problems if p.path.startswith("expectations")],
            },
        )
    if panel == "strata":
        matched = checklist.matching_strata(content["tags"], review_service.strata_table())
        return render(request, f"{TEMPLATE}#strata", {"matched": matched, "tags": content["tags"]})
    if panel == "similar":
        return render(request, f"{TEMPLATE}#similar", {"similar": similar_questions(content["question"], exclude=slug)})
    raise Http404("no such panel")


# -- revisions ------------------------------------------------------------------------


@login_required
@require_POST
def revise(request, slug: str):
    """Propose a revision of an accepted case: the editor opens on a copy of it."""
    case, _ = _get_case_for_user(request, slug)
    _require_proposer(request)
    try:
        revision_start(case=case, user=request.user)
    except PermissionDenied as exc:
        messages.error(request, str(exc))
        return redirect("cases:detail", slug=case.slug)
    messages.success(
        request, f"Revision of version {case.current_version} opened. Relaxing changes need a justification."
    )
    return redirect("cases:edit", slug=case.slug)


@login_required
@require_POST
def discard(request, slug: str):
    case, _ = _get_case_for_user(request, slug)
    revision_discard(case=case, user=request.user)
    messages.success(request, "Revision discarded; the accepted version stays.")
    return redirect("cases:detail", slug=case.slug)


@login_required
@require_POST
def retire(request, slug: str):
    case, _ = _get_case_for_user(request, slug)
    _require_proposer(request)
    try:
        retirement_request(case=case, user=request.user, justification=request.POST.get("justification", ""))
    except CaseProblems as exc:
        messages.error(request, str(exc))
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Retirement sent for review.")
    return redirect("cases:detail", slug=case.slug)
