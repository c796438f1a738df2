"""Leakage: eval cases found in the prompt artifacts the system under test was built from.

A leaked case is marked everywhere it is shown and cannot go into a release until a lead
clears it with a reason.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from cases import roles
from cases.models import Case, LeakFinding, PromptArtifact

MIN_VALUE_CHARS = 12


class ArtifactRefused(Exception):
    pass


def artifact_upload(*, user, name: str, kind: str, data: bytes) -> PromptArtifact:
    if not roles.is_lead(user):
        raise PermissionDenied("only leads register prompt artifacts")
    if len(data) > settings.LEAKAGE_ARTIFACT_MAX_BYTES:
        raise ArtifactRefused(f"the file is {len(data):,} bytes; the limit is {settings.LEAKAGE_ARTIFACT_MAX_BYTES:,}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArtifactRefused(f"the file is not UTF-8 text (byte {exc.start + 1})") from exc
    if not text.strip():
        raise ArtifactRefused("the file is empty")
    with transaction.atomic():
        artifact = PromptArtifact.objects.create(
            name=name.strip()[:200] or "artifact", kind=kind, text=text, size=len(data), uploaded_by=user
        )
        transaction.on_commit(lambda: _enqueue_scan(None))
    return artifact


def _enqueue_scan(case_ids: list[int] | None) -> None:
    from cases.tasks import scan_leaks

    scan_leaks.delay(case_ids)


def needles_for(cases) -> list:
    from cases import leakage

    needles = []
    for case in cases:
        needles.append(leakage.Needle(case.slug, "question", case.question))
        for exp in case.expectations:
            value = exp.get("value")
            if exp.get("kind") == "must-contain" and isinstance(value, str) and len(value.strip()) >= MIN_VALUE_CHARS:
                needles.append(leakage.Needle(case.slug, "must-contain", value))
    return needles


def leaks_scan(case_ids: list[int] | None = None) -> int:
    """Scan cases (all when ``case_ids`` is None) against every artifact; returns findings."""
    from cases import leakage

    artifacts = list(PromptArtifact.objects.values_list("id", "text"))
    cases = Case.objects.all() if case_ids is None else Case.objects.filter(pk__in=case_ids)
    cases = list(cases.only("id", "slug", "question", "expectations"))
    by_slug = {c.slug: c for c in cases}
    found: list[LeakFinding] = []
    if artifacts and cases:
        index = leakage.ArtifactIndex([(str(pk), text) for pk, text in artifacts])
        for f in leakage.scan(needles_for(cases), index, threshold=settings.LEAKAGE_THRESHOLD):
            found.append(
                LeakFinding(
                    case=by_slug[f.case_id],
                    artifact_id=int(f.artifact_id),
                    kind=f.kind,
                    needle=f.excerpt[:500],
                    offset=f.offset,
                    length=f.length,
                    score=round(f.score, 1),
                    excerpt=f.excerpt[:500],
                )
            )
    with transaction.atomic():
        # Findings a lead has cleared stay; the rest are replaced by this scan's.
        LeakFinding.objects.filter(case__in=cases, cleared_by__isnull=True).delete()
        LeakFinding.objects.bulk_create(found, ignore_conflicts=True)
    return len(found)


def leak_clear(*, finding: LeakFinding, user, reason: str) -> LeakFinding:
    if not roles.is_lead(user):
        raise PermissionDenied("only leads clear leaked cases")
    if not reason.strip():
        raise ArtifactRefused("say why this case may stay in releases although it appears in the artifact")
    finding.cleared_by, finding.cleared_reason, finding.cleared_at = user, reason.strip(), timezone.now()
    finding.save(update_fields=["cleared_by", "cleared_reason", "cleared_at"])
    return finding


def leaked_case_ids(case_ids=None) -> set[int]:
    findings = LeakFinding.objects.filter(cleared_by__isnull=True)
    if case_ids is not None:
        findings = findings.filter(case_id__in=case_ids)
    return set(findings.values_list("case_id", flat=True))
