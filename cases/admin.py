"""Admin for leads and superusers. Case edits go through the same validator and audit
trail as every other interface; versions and audit events are read-only here and
append-only in the database."""

import json

from django import forms
from django.contrib import admin

from cases import canonical, roles
from cases.forms import TargetForm
from cases.models import AuditEvent, Case, CaseVersion, CheckRun, Stratum, Target
from cases.services.editing import case_admin_save, edit_problems


class LeadOnlyAdmin(admin.ModelAdmin):
    def has_module_permission(self, request):
        return roles.is_lead(request.user)

    def has_view_permission(self, request, obj=None):
        return roles.is_lead(request.user)

    def has_change_permission(self, request, obj=None):
        return roles.is_lead(request.user)

    def has_add_permission(self, request):
        return roles.is_lead(request.user)

    def has_delete_permission(self, request, obj=None):
        return roles.is_lead(request.user)


class CaseAdminForm(forms.ModelForm):
    justification = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="why you are changing this case (recorded in the audit trail)",
    )

    class Meta:
        model = Case
        fields = [
            "slug",
            "question",
            "tags",
            "status",
            "invariant",
            "source_kind",
            "source_ref",
            "context",
            "rubric",
            "expectations",
            "phrasings",
            "wrong_answers",
            "proposer",
        ]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        content = canonical.content_from_fields(
            slug=data.get("slug", ""),
            question=data.get("question", ""),
            tags=data.get("tags") or [],
            expectations=data.get("expectations") or [],
            invariant=data.get("invariant", False),
            source_kind=data.get("source_kind", ""),
            source_ref=data.get("source_ref", ""),
            context=data.get("context") or {},
            rubric=data.get("rubric") or [],
            phrasings=data.get("phrasings") or [],
            wrong_answers=data.get("wrong_answers") or [],
        )
        stored = Case.objects.filter(pk=self.instance.pk).first() if self.instance.pk else None
        for problem in edit_problems(stored, content, data.get("status", "")):
            self.add_error(None, problem)
        return data


@admin.register(Case)
class CaseAdmin(LeadOnlyAdmin):
    form = CaseAdminForm
    list_display = ("slug", "status", "invariant", "proposer", "current_version", "updated_at")
    list_filter = ("status", "invariant", "source_kind")
    search_fields = ("slug", "question")
    readonly_fields = ("content_hash", "current_version", "created_at", "updated_at")
    raw_id_fields = ("proposer",)

    def has_delete_permission(self, request, obj=None):
        return False  # cases are retired, never deleted: their history must stay

    def save_model(self, request, obj, form, change):
        case_admin_save(case=obj, actor=request.user, justification=form.cleaned_data.get("justification", ""))


class ReadOnlyAdmin(LeadOnlyAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(CaseVersion)
class CaseVersionAdmin(ReadOnlyAdmin):
    list_display = ("case", "number", "accepted_by", "accepted_at", "content_hash")
    search_fields = ("case__slug",)
    readonly_fields = ("case", "number", "content_hash", "accepted_by", "accepted_at", "note", "snapshot")
    exclude = ("canonical_json",)

    @admin.display(description="snapshot")
    def snapshot(self, obj):
        from django.utils.html import format_html

        return format_html("<pre>{}</pre>", json.dumps(json.loads(obj.canonical_json), indent=2, ensure_ascii=False))


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "case", "action", "path", "classification", "actor", "version")
    list_filter = ("action", "classification")
    search_fields = ("case__slug", "justification")


@admin.register(Stratum)
class StratumAdmin(LeadOnlyAdmin):
    list_display = ("name", "tags", "min_cases")


@admin.register(Target)
class TargetAdmin(LeadOnlyAdmin):
    form = TargetForm
    list_display = ("name", "kind", "url", "callable_path", "is_default", "timeout", "retries", "concurrency")

    def save_model(self, request, obj, form, change):
        from cases.services.checks import target_save

        target_save(target=obj, user=request.user)


@admin.register(CheckRun)
class CheckRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "case", "target", "kind", "state", "verdict", "deliveries", "created_at")
    list_filter = ("state", "verdict", "kind", "target")
    search_fields = ("case__slug",)
