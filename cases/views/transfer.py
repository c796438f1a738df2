"""Import (leads) and export (everyone with a role) in the browser."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from cases import roles
from cases.models import CaseStatus
from cases.services import ImportFailed, cases_import, export_lines
from cases.services.importing import IMPORT_STATUSES
from cases.views.access import require_member


@login_required
def import_cases(request):
    if not roles.is_lead(request.user):
        require_member(request)
        raise PermissionDenied("only leads import files")
    errors: list[str] = []
    status = request.POST.get("status", CaseStatus.DRAFT)
    if request.method == "POST":
        upload = request.FILES.get("file")
        if status not in IMPORT_STATUSES:
            errors.append(f"status: {status!r} is not one of {', '.join(IMPORT_STATUSES)}")
        elif upload is None:
            errors.append("file: choose a JSONL file to import")
        else:
            try:
                result = cases_import(
                    stream=upload,
                    user=request.user,
                    status=status,
                    update=request.POST.get("update") == "on",
                    filename=upload.name,
                )
            except ImportFailed as exc:
                errors = exc.errors
            else:
                messages.success(
                    request,
                    f"Imported {result.created} new and {result.updated} updated case(s) as {status}"
                    + (f"; {result.unchanged} unchanged" if result.unchanged else "")
                    + ".",
                )
                return redirect("cases:list")
    return render(
        request,
        "cases/import.html",
        {"errors": errors, "statuses": IMPORT_STATUSES, "status": status},
        status=400 if errors else 200,
    )


@login_required
def export_page(request):
    require_member(request)
    return render(request, "cases/export.html", {"statuses": CaseStatus.choices})


@login_required
@require_GET
def export_download(request):
    require_member(request)
    status = request.GET.get("status") or None
    if status is not None and status not in CaseStatus.values:
        raise Http404("unknown status")
    name = f"cases-{status or 'all'}.jsonl"
    response = StreamingHttpResponse(export_lines(status=status), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
