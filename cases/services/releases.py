"""Releases (golden-set versions): accepted case versions frozen under a sequential number,
a sha256 over their canonical JSONL and a changelog against the previous release."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import connection, transaction

from cases import canonical, relaxation, roles, validation
from cases.models import Case, CaseStatus, CaseVersion, Release, ReleaseItem
from cases.services.leaks import leaked_case_ids


class ReleaseRefused(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def release_line(version: CaseVersion, slug: str) -> str:
    """One line of a release's JSONL: the version's content with ``version`` and ``status``."""
    content = json.loads(version.canonical_json)
    return canonical.canonical_json(content | {"version": version.number, "status": CaseStatus.ACCEPTED})


def release_hash(lines: list[str]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def candidates() -> tuple[list[tuple[Case, CaseVersion]], list[dict[str, str]]]:
    """(included, held back): the current accepted version of every non-retired case, and
    the cases that cannot go in and why (a review pending, a why missing)."""
    included, held = [], []
    cases = Case.objects.filter(current_version__isnull=False).exclude(status=CaseStatus.RETIRED).order_by("slug")
    versions = {
        (v.case_id, v.number): v
        for v in CaseVersion.objects.filter(case__in=cases).only(
            "id", "case_id", "number", "canonical_json", "content_hash"
        )
    }
    leaked = leaked_case_ids([c.pk for c in cases])
    for case in cases:
        if case.pk in leaked:
            held.append({"caseId": case.slug, "reason": "found in a prompt artifact; a lead must clear it first"})
            continue
        if case.status != CaseStatus.ACCEPTED:
            held.append({"caseId": case.slug, "reason": f"its latest review is pending ({case.status})"})
            continue
        version = versions[(case.pk, case.current_version)]
        problems = validation.validate_case(json.loads(version.canonical_json), draft=False)
        if problems:
            held.append({"caseId": case.slug, "reason": "; ".join(str(p) for p in problems[:3])})
            continue
        included.append((case, version))
    return included, held


def changelog(
    previous: Release | None, included: list[tuple[Case, CaseVersion]], held_back: set[str] = frozenset()
) -> dict[str, Any]:
    before = {}
    if previous is not None:
        before = {item.case_slug: item.version for item in previous.items.select_related("version")}
    after = {case.slug: version for case, version in included}
    log: dict[str, Any] = {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "tightened": [],
        "relaxed": [],
        "changed": [],
    }
    for slug in sorted(set(before) & set(after)):
        old, new = before[slug], after[slug]
        if old.pk == new.pk:
            continue
        changes = relaxation.diff_contents(json.loads(old.canonical_json), json.loads(new.canonical_json))
        entry = {
            "caseId": slug,
            "from": old.number,
            "to": new.number,
            "reasons": [f"{c.path}: {c.reason}" for c in changes if c.classification != "neutral"],
        }
        if any(c.relaxing for c in changes):
            log["relaxed"].append(entry)
        elif any(c.classification == "tightening" for c in changes):
            log["tightened"].append(entry)
        else:
            log["changed"].append(entry)
    return log


def release_create(*, user, note: str = "") -> Release:
    """Cut the next release (leads only)."""
    if not roles.is_lead(user):
        raise PermissionDenied("only leads cut releases")
    with transaction.atomic():
        # One release at a time: the next number is taken under a transaction-scoped lock.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('reviewapp-release'))")
        previous = Release.objects.order_by("-number").first()
        included, held = candidates()
        if not included:
            raise ReleaseRefused(["there is no accepted case to release"])
        lines = [release_line(version, case.slug) for case, version in included]
        log = changelog(previous, included, {h["caseId"] for h in held}) | {"heldBack": held}
        release = Release.objects.create(
            number=(previous.number + 1) if previous else 1,
            content_hash=release_hash(lines),
            note=note.strip(),
            changelog=log,
            case_count=len(included),
            created_by=user,
        )
        ReleaseItem.objects.bulk_create(
            [ReleaseItem(release=release, version=version, case_slug=case.slug) for case, version in included]
        )
    return release


def release_lines(release: Release) -> Iterator[str]:
    """The release as JSONL (with newlines), in id order; hashes to ``release.content_hash``."""
    items = release.items.select_related("version").order_by("case_slug").iterator(chunk_size=2000)
    for item in items:
        yield release_line(item.version, item.case_slug) + "\n"
