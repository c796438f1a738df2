"""Revisions of accepted cases, the relaxed-assertion audit, and releases.

Covers design.md "Lifecycle", "Audit trail and relaxed assertions" and "Releases and
runs": an accepted case changes only through a reviewed revision; every relaxing change
needs a justification and shows up on the lead's audit page and in ``audit_report``;
releases freeze accepted versions under a sequential number and a stable content hash.
Real PostgreSQL; no Celery worker (nothing is enqueued).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from datetime import datetime, timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.utils import DatabaseError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from cases import canonical, roles
from cases.models import (
    ApiToken,
    AuditAcknowledgement,
    AuditAction,
    AuditEvent,
    Case,
    CaseStatus,
    CaseVersion,
    Classification,
    Release,
    ReleaseItem,
    Review,
    Stratum,
)
from cases.services import cases_import, checks, tokens
from cases.services.audit_report import quarter_start
from cases.services.editing import case_admin_save
from cases.services.lifecycle import (
    CaseProblems,
    case_submit,
    case_update,
    retirement_request,
    revision_discard,
    revision_start,
)
from cases.services.releases import release_create, release_hash, release_line
from cases.services.review import Marks, review_decide
from tests.conftest import case_obj, jsonl, make_user

pytestmark = pytest.mark.django_db

OVERRIDES = {2: "checked by hand", 3: "phrasings checked by hand", 5: "stratum checked by hand"}
MUST_NOT_CONTAIN = "expectations[1]"  # case_obj's must-not-contain "30"
# Justifications are keyed by change (action and path): a removed and a modified
# expectation can share a path.
REMOVAL = "expectation-removed:expectations[1]"
ORIGINAL_WHY = "the superseded 2024 term"
MUST_NOT_CONTAIN_VALUE = "30"


# -- fixtures and helpers ---------------------------------------------------------------


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def no_enqueue(monkeypatch):
    """Nothing goes to Redis: there is no worker in these tests (and no default target)."""
    monkeypatch.setattr(checks, "enqueue", lambda ids, target: None)


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def accept(lead, case_id: str, **overrides) -> Case:
    """An accepted case at version 1, imported by a lead (so the lead is its proposer)."""
    cases_import(stream=jsonl(case_obj(case_id, **overrides)), user=lead, status=CaseStatus.ACCEPTED)
    return Case.objects.get(slug=case_id)


def content(case: Case) -> dict:
    case.refresh_from_db()
    return canonical.content_of_case(case)


def approve(case: Case, user, comment: str = "ok") -> Review:
    case.refresh_from_db()
    return review_decide(
        case=case,
        user=user,
        decision="approve",
        marks=Marks(required={i: True for i in range(len(case.expectations))}, volatility_ok=True, overrides=OVERRIDES),
        comment=comment,
        round=case.review_round,
        content_hash=case.content_hash,
    )


def decide(case: Case, user, decision: str, comment: str = "no") -> Review:
    case.refresh_from_db()
    return review_decide(
        case=case,
        user=user,
        decision=decision,
        comment=comment,
        round=case.review_round,
        content_hash=case.content_hash,
    )


def relaxed_content(case: Case) -> dict:
    """The case without its must-not-contain (a relaxation)."""
    new = content(case)
    removed = new["expectations"].pop(1)
    assert removed["kind"] == "must-not-contain" and removed["why"] == ORIGINAL_WHY
    return new


def tightened_content(case: Case, value: str = "net 60") -> dict:
    new = content(case)
    new["expectations"].append({"kind": "must-not-contain", "value": value, "why": "another customer's term"})
    return new


def relax(case: Case, editor, justification: str = "the 2024 term can no longer be confused") -> Case:
    """Open, relax (justified) and submit a revision."""
    revision_start(case=case, user=editor)
    case_update(case=case, user=editor, content=relaxed_content(case), justifications={REMOVAL: justification})
    return case_submit(case=case, user=editor)


def tighten(case: Case, editor, value: str = "net 60") -> Case:
    revision_start(case=case, user=editor)
    case_update(case=case, user=editor, content=tightened_content(case, value))
    return case_submit(case=case, user=editor)


def retire(case: Case, editor, justification: str = "the product was discontinued") -> Case:
    return retirement_request(case=case, user=editor, justification=justification)


def version_content(case: Case, number: int) -> dict:
    return json.loads(CaseVersion.objects.get(case=case, number=number).canonical_json)


def body(response) -> str:
    return response.content.decode()


def streamed(response) -> bytes:
    return b"".join(response.streaming_content)


def audit_rows_html(page: str) -> dict[int, str]:
    """Rows of the audit table by event id."""
    return {int(pk): row for pk, row in re.findall(r'<tr id="event-(\d+)">(.*?)</tr>', page, re.S)}


def run_audit_report(*args) -> list[dict]:
    out = io.StringIO()
    call_command("audit_report", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


# -- 1. the revision flow, end to end --------------------------------------------------


def test_revision_flow_end_to_end(lead, expert, reviewer):
    case = accept(lead, "rev-flow")
    v1 = CaseVersion.objects.get(case=case, number=1)
    v1_row = (v1.canonical_json, v1.content_hash, v1.accepted_by_id, v1.accepted_at)

    case = revision_start(case=case, user=expert)
    case.refresh_from_db()
    assert (case.status, case.revision_of, case.revised_by) == (CaseStatus.DRAFT, 1, expert)
    assert case.current_version == 1
    v1.refresh_from_db()
    assert (v1.canonical_json, v1.content_hash, v1.accepted_by_id, v1.accepted_at) == v1_row
    assert CaseVersion.objects.filter(case=case).count() == 1

    # A relaxing change without a justification: refused, naming the path and quoting the why.
    before_hash, events_before = case.content_hash, AuditEvent.objects.filter(case=case).count()
    with pytest.raises(CaseProblems) as refused:
        case_update(case=case, user=expert, content=relaxed_content(case))
    paths = [p.path for p in refused.value.problems]
    assert paths == [MUST_NOT_CONTAIN]
    assert repr(ORIGINAL_WHY) in str(refused.value) and "justification" in str(refused.value)
    case.refresh_from_db()
    assert case.content_hash == before_hash and len(case.expectations) == 4
    assert case.revision_justifications == {}
    assert AuditEvent.objects.filter(case=case).count() == events_before

    # A blank justification is no justification.
    with pytest.raises(CaseProblems):
        case_update(case=case, user=expert, content=relaxed_content(case), justifications={REMOVAL: "  "})

    justification = "the 2024 term is gone from every document; no model can confuse it any more"
    case_update(case=case, user=expert, content=relaxed_content(case), justifications={REMOVAL: justification})
    case.refresh_from_db()
    assert len(case.expectations) == 3
    assert case.revision_justifications == {REMOVAL: justification}
    event = AuditEvent.objects.get(case=case, action=AuditAction.EXPECTATION_REMOVED)
    assert event.classification == Classification.RELAXING
    assert (event.justification, event.version, event.actor, event.path) == (justification, 2, expert, MUST_NOT_CONTAIN)
    assert event.context["why"] == ORIGINAL_WHY
    assert event.before["value"] == "30" and event.after is None

    case_submit(case=case, user=expert)
    case.refresh_from_db()
    assert case.status == CaseStatus.PROPOSED

    review = approve(case, reviewer)
    case.refresh_from_db()
    v2 = CaseVersion.objects.get(case=case, number=2)
    assert (v2.review, v2.accepted_by) == (review, reviewer)
    assert v2.content_hash == case.content_hash
    assert json.loads(v2.canonical_json) == canonical.content_of_case(case)
    assert review.version == 2
    assert (case.status, case.current_version) == (CaseStatus.ACCEPTED, 2)
    assert (case.revision_of, case.revised_by, case.revision_justifications, case.retire_requested) == (
        None,
        None,
        {},
        False,
    )
    assert version_content(case, 1)["expectations"] == case_obj("rev-flow")["expectations"]

    page = login(reviewer).get(reverse("cases:detail", args=[case.slug]), {"a": 1, "b": 2})
    assert page.status_code == 200
    html = body(page)
    (table,) = re.findall(r'<table class="diff" id="version-diff">(.*?)</table>', html, re.S)
    assert "<th>v1</th><th>v2</th>" in table
    (changes,) = re.findall(r'<ul class="changes">(.*?)</ul>', html, re.S)
    assert 'class="tag tag-relaxing">relaxing</span> <code>expectations[1]</code>' in changes
    assert "must-not-contain" in changes and "removed" in changes


# -- 2. who may decide a revision -------------------------------------------------------


def test_the_reviser_and_the_proposer_cannot_approve_a_revision(lead, reviewer):
    # Both could review in general: the proposer is a lead, the reviser an expert who also reviews.
    reviser = make_user("expert-reviewer", roles.EXPERT, roles.REVIEWER)
    case = accept(lead, "rev-who")
    tighten(case, reviser)
    for user in (reviser, lead):
        with pytest.raises(PermissionDenied):
            approve(case, user)
    assert not Review.objects.filter(case=case).exists()
    case.refresh_from_db()
    assert case.status == CaseStatus.PROPOSED
    approve(case, reviewer)
    case.refresh_from_db()
    assert (case.status, case.current_version) == (CaseStatus.ACCEPTED, 2)


# -- 3. a rejected or discarded revision leaves the accepted version ----------------------


def test_rejecting_a_revision_restores_the_accepted_content(lead, expert, reviewer):
    case = accept(lead, "rev-reject")
    v1 = CaseVersion.objects.get(case=case, number=1)
    relax(case, expert)
    case.refresh_from_db()
    assert case.content_hash != v1.content_hash
    review = decide(case, reviewer, "reject", comment="the term still appears in old invoices")
    assert review.decision == "reject"
    case.refresh_from_db()
    assert (case.status, case.current_version, case.content_hash) == (CaseStatus.ACCEPTED, 1, v1.content_hash)
    assert canonical.content_of_case(case) == json.loads(v1.canonical_json)
    assert (case.revision_of, case.revised_by, case.revision_justifications) == (None, None, {})
    assert CaseVersion.objects.filter(case=case).count() == 1


def test_discarding_a_revision_before_submission_restores_the_accepted_content(lead, expert, second_expert):
    case = accept(lead, "rev-discard")
    v1 = CaseVersion.objects.get(case=case, number=1)
    revision_start(case=case, user=expert)
    case_update(case=case, user=expert, content=relaxed_content(case), justifications={REMOVAL: "because"})
    with pytest.raises(PermissionDenied):
        revision_discard(case=case, user=second_expert)
    revision_discard(case=case, user=expert)
    case.refresh_from_db()
    assert (case.status, case.current_version, case.content_hash) == (CaseStatus.ACCEPTED, 1, v1.content_hash)
    assert canonical.content_of_case(case) == json.loads(v1.canonical_json)
    assert (case.revision_of, case.revised_by, case.revision_justifications) == (None, None, {})
    # The case can be revised again afterwards.
    revision_start(case=case, user=second_expert)


# -- 4. tightening needs no justification -------------------------------------------------


def test_a_tightening_revision_needs_no_justification(lead, expert, reviewer):
    case = accept(lead, "rev-tight")
    revision_start(case=case, user=expert)
    case_update(case=case, user=expert, content=tightened_content(case))
    event = AuditEvent.objects.get(case=case, action=AuditAction.EXPECTATION_ADDED)
    assert (event.classification, event.path, event.version, event.justification) == (
        Classification.TIGHTENING,
        "expectations[4]",
        2,
        "",
    )
    case_submit(case=case, user=expert)
    approve(case, reviewer)
    case.refresh_from_db()
    assert (case.status, case.current_version) == (CaseStatus.ACCEPTED, 2)
    assert not AuditEvent.objects.filter(
        case=case, classification=Classification.RELAXING, action__startswith="expectation"
    ).exists()


# -- 5. retirement ------------------------------------------------------------------------


def test_retirement_needs_a_justification_and_a_review(lead, expert, reviewer):
    case = accept(lead, "rev-retire")
    keep = accept(lead, "rev-keep")
    first = release_create(user=lead)
    assert first.case_count == 2
    for blank in ("", "   "):
        with pytest.raises(CaseProblems) as refused:
            retirement_request(case=case, user=expert, justification=blank)
        assert [p.path for p in refused.value.problems] == ["justification"]
    case.refresh_from_db()
    assert (case.status, case.retire_requested) == (CaseStatus.ACCEPTED, False)

    justification = "Northline was acquired; its terms no longer apply"
    retire(case, expert, justification)
    case.refresh_from_db()
    assert (case.status, case.retire_requested, case.revised_by) == (CaseStatus.PROPOSED, True, expert)
    with pytest.raises(PermissionDenied):
        approve(case, expert)
    approve(case, reviewer, comment="agreed, retire it")
    case.refresh_from_db()
    assert case.status == CaseStatus.RETIRED
    assert (case.retire_requested, case.revision_of, case.revised_by) == (False, None, None)
    assert case.current_version == 1 and CaseVersion.objects.filter(case=case).count() == 1
    event = AuditEvent.objects.get(case=case, action=AuditAction.RETIRED)
    assert (event.classification, event.justification, event.path) == (
        Classification.RELAXING,
        justification,
        "status",
    )
    assert (event.before, event.after) == (CaseStatus.ACCEPTED, CaseStatus.RETIRED)
    assert event.context["approved_by"] == reviewer.pk
    assert event.actor == expert

    second = release_create(user=lead)
    assert list(second.items.values_list("case_slug", flat=True)) == [keep.slug]
    assert second.changelog["removed"] == [case.slug]
    assert second.changelog["added"] == [] and second.changelog["relaxed"] == []


def test_a_refused_retirement_leaves_the_case_accepted(lead, expert, reviewer):
    case = accept(lead, "rev-keep-alive")
    retire(case, expert)
    decide(case, reviewer, "reject", comment="still asked weekly")
    case.refresh_from_db()
    assert (case.status, case.retire_requested, case.current_version) == (CaseStatus.ACCEPTED, False, 1)
    assert not AuditEvent.objects.filter(case=case, action=AuditAction.RETIRED).exists()


# -- 6. no edits in place -------------------------------------------------------------------


def test_an_accepted_case_cannot_be_edited_in_place(lead, expert):
    case = accept(lead, "rev-frozen")
    v1_hash = case.content_hash
    for user in (lead, expert):
        with pytest.raises(PermissionDenied):
            case_update(case=case, user=user, content=relaxed_content(case), justifications={REMOVAL: "x"})
    case.refresh_from_db()
    case.expectations = case.expectations[:1]
    with pytest.raises(ValidationError) as refused:
        case_admin_save(case=case, actor=lead, justification="cleanup")
    assert "revision" in str(refused.value)
    case.refresh_from_db()
    assert (case.content_hash, len(case.expectations), case.status) == (v1_hash, 4, CaseStatus.ACCEPTED)


# -- 7. the lead's audit page ---------------------------------------------------------------


@pytest.fixture
def audited(lead, expert, second_expert, reviewer):
    """Two relaxations this quarter (different cases, editors and strata), one before it."""
    pay = accept(lead, "audit-pay", tags=["payments", "fact"])
    ship = accept(lead, "audit-ship", tags=["shipping", "fact"])
    old = accept(lead, "audit-old", tags=["payments", "fact"])
    relax(pay, expert, "payments justification")
    approve(pay, reviewer)
    relax(ship, second_expert, "shipping justification")
    approve(ship, reviewer)
    before_quarter = timezone.make_aware(
        datetime.combine(quarter_start(timezone.localdate()) - timedelta(days=3), datetime.min.time())
    )
    old_event = AuditEvent.objects.create(
        case=old,
        version=2,
        actor=expert,
        at=before_quarter,
        action=AuditAction.EXPECTATION_REMOVED,
        path=MUST_NOT_CONTAIN,
        before=case_obj("audit-old")["expectations"][1],
        classification=Classification.RELAXING,
        reason="old relaxation",
        justification="last quarter's justification",
        context={"why": ORIGINAL_WHY},
    )
    stratum = Stratum.objects.create(name="Payments", tags=["payments"])
    return {
        "pay": AuditEvent.objects.get(case=pay, action=AuditAction.EXPECTATION_REMOVED),
        "ship": AuditEvent.objects.get(case=ship, action=AuditAction.EXPECTATION_REMOVED),
        "old": old_event,
        "stratum": stratum,
    }


def test_audit_page_shows_relaxations_of_this_quarter(audited, lead, reviewer):
    page = login(lead).get(reverse("cases:audit"))
    assert page.status_code == 200
    html = body(page)
    rows = audit_rows_html(html)
    pay, ship, old = audited["pay"], audited["ship"], audited["old"]
    assert pay.pk in rows and ship.pk in rows
    assert old.pk not in rows and "last quarter&#x27;s justification" not in html
    row = rows[pay.pk]
    assert ORIGINAL_WHY in row and "payments justification" in row
    assert "expert" in row and reviewer.username in row and "not approved yet" not in row
    assert "audit-pay" in row and "v2" in row
    # Overrides of the approvals are relaxations too: 2 removals + 2 x 3 overrides.
    assert len(rows) == 2 + 2 * len(OVERRIDES)
    assert re.search(r'<svg class="chart"[^>]*>.*?<rect .*?</svg>', html, re.S)
    # An explicit period that covers last quarter shows the old event.
    since = (old.at - timedelta(days=1)).date().isoformat()
    assert old.pk in audit_rows_html(body(login(lead).get(reverse("cases:audit"), {"since": since})))


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"case": "audit-pay"}, {"pay"}),
        ({"editor": "expert2"}, {"ship"}),
        ({"editor": "expert"}, {"pay"}),
        ({"stratum": "STRATUM"}, {"pay"}),
    ],
)
def test_audit_page_filters(audited, lead, params, expected):
    if params.get("stratum") == "STRATUM":
        params = {"stratum": str(audited["stratum"].pk)}
    rows = audit_rows_html(body(login(lead).get(reverse("cases:audit"), params)))
    removals = {name for name in ("pay", "ship", "old") if audited[name].pk in rows}
    assert removals == expected
    if "editor" in params:  # overrides are by the reviewer, not the editor
        assert len(rows) == 1
    else:
        assert len(rows) == 1 + len(OVERRIDES)


def test_audit_acknowledge(audited, lead):
    client = login(lead)
    event = audited["pay"]
    response = client.post(reverse("cases:audit-ack", args=[event.pk]), {"note": "fine"})
    assert response.status_code == 302
    ack = AuditAcknowledgement.objects.get(event=event)
    assert (ack.lead, ack.note) == (lead, "fine")
    row = audit_rows_html(body(client.get(reverse("cases:audit"))))[event.pk]
    assert "acknowledged by lead" in row and "Revert in a revision" not in row
    # A second acknowledgement changes nothing.
    client.post(reverse("cases:audit-ack", args=[event.pk]))
    assert AuditAcknowledgement.objects.filter(event=event).count() == 1


def test_audit_pages_are_for_leads_only(audited, expert, reviewer, outsider):
    event = audited["pay"]
    urls = [
        ("get", reverse("cases:audit")),
        ("post", reverse("cases:audit-ack", args=[event.pk])),
        ("post", reverse("cases:audit-revert", args=[event.pk])),
    ]
    for user, status in ((expert, 403), (reviewer, 403), (outsider, 404)):
        client = login(user)
        for method, url in urls:
            assert getattr(client, method)(url).status_code == status, (user.username, url)
    assert not AuditAcknowledgement.objects.exists()
    assert Case.objects.get(slug="audit-pay").status == CaseStatus.ACCEPTED


def test_revert_opens_a_revision_that_undoes_the_change(audited, lead):
    event = audited["pay"]
    response = login(lead).post(reverse("cases:audit-revert", args=[event.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("cases:edit", args=["audit-pay"])
    case = Case.objects.get(slug="audit-pay")
    assert (case.status, case.revision_of, case.revised_by) == (CaseStatus.DRAFT, 2, lead)
    assert event.before in case.expectations and len(case.expectations) == 4
    added = AuditEvent.objects.filter(case=case, action=AuditAction.EXPECTATION_ADDED).get()
    assert (added.classification, added.after, added.version) == (Classification.TIGHTENING, event.before, 3)
    # The lead submits it like any revision; someone else approves it.
    case_submit(case=case, user=lead)
    approve(case, make_user("reviewer2", roles.REVIEWER))
    case.refresh_from_db()
    assert case.current_version == 3 and event.before in version_content(case, 3)["expectations"]


# -- 8. the audit_report command --------------------------------------------------------------


def test_audit_report_relaxed_json(audited, reviewer):
    rows = run_audit_report("--relaxed", "--json")
    keys = {"caseId", "version", "classification", "reason", "justification", "actor", "approver", "at"}
    assert len(rows) == 3 + 2 * len(OVERRIDES)
    for row in rows:
        assert keys <= set(row)
        assert row["classification"] == "relaxing"
    by_case = {(r["caseId"], r["action"]): r for r in rows if r["action"] == AuditAction.EXPECTATION_REMOVED}
    pay = by_case[("audit-pay", AuditAction.EXPECTATION_REMOVED)]
    assert (pay["version"], pay["justification"], pay["actor"], pay["approver"]) == (
        2,
        "payments justification",
        "expert",
        reviewer.username,
    )
    assert pay["why"] == ORIGINAL_WHY
    overrides = [r for r in rows if r["action"] == AuditAction.OVERRIDE]
    assert {r["justification"] for r in overrides} == set(OVERRIDES.values())
    assert {r["approver"] for r in overrides} == {reviewer.username}
    # Oldest first.
    assert [r["at"] for r in rows] == sorted(r["at"] for r in rows)
    assert rows[0]["caseId"] == "audit-old"


def test_audit_report_since_and_errors(audited):
    since = quarter_start(timezone.localdate()).isoformat()
    recent = run_audit_report("--relaxed", "--json", "--since", since)
    assert "audit-old" not in {r["caseId"] for r in recent}
    assert len(recent) == 2 + 2 * len(OVERRIDES)
    assert run_audit_report("--relaxed", "--json", "--since", "2999-01-01") == []
    # Without --relaxed every classified change is listed (the tightenings and neutral ones too).
    everything = run_audit_report("--json")
    assert len(everything) >= len(recent) + 1
    for bad in ("yesterday", "2026-13-01", "01/02/2026"):
        with pytest.raises(CommandError, match="--since"):
            call_command("audit_report", "--since", bad, stdout=io.StringIO())
    text = io.StringIO()
    call_command("audit_report", "--relaxed", stdout=text)
    assert "payments justification" in text.getvalue() and "audit-pay v2" in text.getvalue()


# -- 9. releases ----------------------------------------------------------------------------------


def stored_hash(release: Release) -> str:
    items = ReleaseItem.objects.filter(release=release).select_related("version").order_by("case_slug")
    return release_hash([release_line(item.version, item.case_slug) for item in items])


def download(client: Client, release: Release) -> bytes:
    response = client.get(reverse("cases:release-download", args=[release.number]))
    assert response.status_code == 200
    assert response["X-Content-SHA256"] == release.content_hash
    return streamed(response)


def export_release(capsysbinary, number: int) -> bytes:
    capsysbinary.readouterr()
    call_command("export_cases", "--release", str(number))
    return capsysbinary.readouterr().out


def test_releases_changelogs_and_hashes(lead, expert, reviewer, capsysbinary):
    a = accept(lead, "rel-a", question="Quelle est la durée? — “net 45”")
    b = accept(lead, "rel-b")
    r1 = release_create(user=lead, note="first")
    assert (r1.number, r1.case_count) == (1, 2)
    assert r1.changelog["added"] == ["rel-a", "rel-b"] and r1.changelog["heldBack"] == []

    tighten(b, expert)
    approve(b, reviewer)
    c = accept(lead, "rel-c")
    r2 = release_create(user=lead)
    log = r2.changelog
    assert r2.number == 2 and r2.case_count == 3
    assert (log["added"], log["removed"], log["relaxed"]) == (["rel-c"], [], [])
    assert [(e["caseId"], e["from"], e["to"]) for e in log["tightened"]] == [("rel-b", 1, 2)]

    relax(a, expert)
    approve(a, reviewer)
    retire(c, expert)
    approve(c, reviewer)
    r3 = release_create(user=lead)
    log = r3.changelog
    assert r3.number == 3 and r3.case_count == 2
    assert (log["added"], log["removed"], log["tightened"]) == ([], ["rel-c"], [])
    assert [(e["caseId"], e["from"], e["to"]) for e in log["relaxed"]] == [("rel-a", 1, 2)]
    assert any(MUST_NOT_CONTAIN in reason for reason in log["relaxed"][0]["reasons"])
    assert sorted(ReleaseItem.objects.filter(release=r3).values_list("case_slug", "version__number")) == [
        ("rel-a", 2),
        ("rel-b", 2),
    ]

    client = login(reviewer)
    for release in (r1, r2, r3):
        assert stored_hash(release) == release.content_hash
        data = download(client, release)
        assert hashlib.sha256(data).hexdigest() == release.content_hash
        assert export_release(capsysbinary, release.number) == data
        lines = [json.loads(line) for line in data.decode("utf-8").splitlines()]
        assert len(lines) == release.case_count
        assert all(line["status"] == "accepted" for line in lines)
    first_lines = [json.loads(line) for line in download(client, r1).splitlines()]
    assert first_lines[0]["question"] == "Quelle est la durée? — “net 45”"
    assert [(line["id"], line["version"]) for line in first_lines] == [("rel-a", 1), ("rel-b", 1)]

    # Nothing changed: the same content hashes the same, and the changelog is empty.
    r4 = release_create(user=lead)
    assert r4.number == 4 and r4.content_hash == r3.content_hash
    assert all(r4.changelog[key] == [] for key in ("added", "removed", "tightened", "relaxed", "changed", "heldBack"))

    # The release pages list and show them.
    listing = body(client.get(reverse("cases:releases")))
    assert all(f'href="{reverse("cases:release", args=[n])}"' in listing for n in (1, 2, 3, 4))
    assert r3.content_hash in body(client.get(reverse("cases:release", args=[3])))


def test_a_case_with_a_pending_revision_is_held_back(lead, expert):
    a = accept(lead, "held-a")
    accept(lead, "held-b")
    release_create(user=lead)
    revision_start(case=a, user=expert)
    release = release_create(user=lead)
    assert list(release.items.values_list("case_slug", flat=True)) == ["held-b"]
    assert [h["caseId"] for h in release.changelog["heldBack"]] == ["held-a"]
    assert "pending" in release.changelog["heldBack"][0]["reason"]
    # Note: the held-back case is also listed under "removed" (not asserted either way; see the report).


def test_only_leads_cut_releases_and_an_empty_set_is_refused(lead, reviewer, expert):
    from cases.services.releases import ReleaseRefused

    for user in (reviewer, expert):
        with pytest.raises(PermissionDenied):
            release_create(user=user)
    with pytest.raises(ReleaseRefused):
        release_create(user=lead)
    assert not Release.objects.exists()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE cases_release SET content_hash = repeat('0', 64)",
        "DELETE FROM cases_release",
        "UPDATE cases_releaseitem SET case_slug = 'rewritten'",
        "DELETE FROM cases_releaseitem",
    ],
)
def test_releases_are_append_only(lead, sql):
    accept(lead, "frozen-a")
    release = release_create(user=lead)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql)
    assert Release.objects.get(pk=release.pk).content_hash == release.content_hash
    assert list(ReleaseItem.objects.filter(release=release).values_list("case_slug", flat=True)) == ["frozen-a"]


# -- 10. the API for scripts ------------------------------------------------------------------------


def test_api_release_needs_a_token(lead, expert, reviewer):
    accept(lead, "api-a")
    release = release_create(user=lead)
    url = reverse("cases:api-release", args=["latest"])
    assert url == "/api/releases/latest.jsonl"
    client = Client()
    response = client.get(url)
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"
    assert client.get(url, HTTP_AUTHORIZATION="Bearer crv_not-a-token").status_code == 401

    token, secret = tokens.token_create(user=reviewer, name="nightly")
    response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200
    data = streamed(response)
    assert hashlib.sha256(data).hexdigest() == release.content_hash
    assert json.loads(data)["id"] == "api-a"
    token.refresh_from_db()
    assert token.last_used_at is not None
    by_number = client.get(reverse("cases:api-release", args=["1"]), HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert streamed(by_number) == data
    assert client.get("/api/releases/9.jsonl", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 404

    # A member who lost every role: the token no longer opens anything.
    _, expert_secret = tokens.token_create(user=expert, name="old job")
    expert.groups.clear()
    assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {expert_secret}").status_code == 404
    # And someone without a role cannot create one (a fresh object: roles are cached per instance).
    with pytest.raises(PermissionError):
        tokens.token_create(user=type(expert).objects.get(pk=expert.pk), name="again")
    # An inactive user's token is no token.
    reviewer.is_active = False
    reviewer.save()
    assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 401


def test_the_token_page_shows_a_new_token_once(expert, lead):
    accept(lead, "token-a")
    release = release_create(user=lead)
    client = login(expert)
    response = client.post(reverse("cases:tokens"), {"name": "nightly eval"})
    assert response.status_code == 200
    (secret,) = re.findall(r'<pre id="new-token">([^<]+)</pre>', body(response))
    token = ApiToken.objects.get(user=expert)
    assert token.token_hash != secret and secret not in token.token_hash
    assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert (token.name, token.prefix) == ("nightly eval", secret[:8])
    again = body(client.get(reverse("cases:tokens")))
    assert secret not in again and "nightly eval" in again
    api = Client().get("/api/releases/latest.jsonl", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.status_code == 200 and hashlib.sha256(streamed(api)).hexdigest() == release.content_hash
    # Revoking deletes it.
    client.post(reverse("cases:tokens"), {"revoke": token.pk})
    assert not ApiToken.objects.exists()


# -- bugs found while writing the above ------------------------------------------------------------


def test_the_approver_of_a_retirement_is_the_reviewer_who_approved_it(lead, expert, reviewer):
    """The audit names who approved each relaxation; for a retirement that is the retirement's reviewer."""
    second = make_user("reviewer2", roles.REVIEWER)
    case = accept(lead, "retire-approver")
    relax(case, expert)
    approve(case, reviewer)  # writes v2
    retire(case, expert)
    approve(case, second, comment="retire it")
    retired = AuditEvent.objects.get(case=case, action=AuditAction.RETIRED)
    assert retired.context["approved_by"] == second.pk  # the event itself is right
    (row,) = [r for r in run_audit_report("--relaxed", "--json") if r["action"] == AuditAction.RETIRED]
    assert row["approver"] == second.username
    page = audit_rows_html(body(login(lead).get(reverse("cases:audit"))))[retired.pk]
    assert second.username in page


def test_a_rejected_revisions_relaxation_is_never_shown_as_approved(lead, expert, reviewer):
    """A relaxation proposed in a rejected revision was never approved, even when a later,
    unrelated revision is approved as the same version number."""
    second = make_user("reviewer2", roles.REVIEWER)
    case = accept(lead, "rejected-relax")
    relax(case, expert, "the rejected justification")
    decide(case, reviewer, "reject", comment="no, keep it")
    tighten(case, expert)
    approve(case, second)  # the tightening becomes v2
    removed = AuditEvent.objects.get(case=case, action=AuditAction.EXPECTATION_REMOVED)
    assert MUST_NOT_CONTAIN_VALUE in [e.get("value") for e in version_content(case, 2)["expectations"]]
    (row,) = [r for r in run_audit_report("--relaxed", "--json") if r["id"] == removed.pk]
    assert row["approver"] is None, f"shown as approved by {row['approver']} (it was rejected)"


def test_one_justification_covers_only_the_relaxation_it_was_written_for(lead, expert):
    """Removing expectations[1] and weakening the must-cite (now at index 1) are two relaxations
    of two expectations with two different whys; each needs its own justification."""
    case = accept(lead, "two-relaxations")
    revision_start(case=case, user=expert)
    new = relaxed_content(case)  # removes the must-not-contain at index 1
    assert new["expectations"][1]["kind"] == "must-cite"
    new["expectations"][1] = dict(new["expectations"][1], documentId="some-other-document")
    with pytest.raises(CaseProblems) as refused:
        case_update(case=case, user=expert, content=new)
    relaxing = [p for p in refused.value.problems if "justification" in p.message]
    assert len(relaxing) == 2 and "provenance" in str(refused.value) and ORIGINAL_WHY in str(refused.value)
    # A justification written for the removal (it answers "the superseded 2024 term") ...
    with pytest.raises(CaseProblems):
        case_update(case=case, user=expert, content=new, justifications={REMOVAL: "the 2024 term is gone everywhere"})


@pytest.mark.parametrize(
    "request_kind",
    [
        pytest.param(
            "audit stratum",
        ),
        pytest.param(
            "api release number",
        ),
        pytest.param(
            "token revoke",
        ),
    ],
)
def test_odd_parameters_are_not_a_server_error(lead, request_kind):
    accept(lead, "odd-a")
    release_create(user=lead)
    client = Client(raise_request_exception=False)
    client.force_login(lead)
    if request_kind == "audit stratum":
        response = client.get(reverse("cases:audit"), {"stratum": "abc"})
    elif request_kind == "api release number":
        _, secret = tokens.token_create(user=lead, name="odd")
        response = client.get("/api/releases/\u00b2.jsonl", HTTP_AUTHORIZATION=f"Bearer {secret}")
    else:
        response = client.post(reverse("cases:tokens"), {"revoke": "abc"})
    assert response.status_code < 500


def test_the_admin_cannot_retire_an_accepted_case_without_review_or_audit(lead):
    """A retirement is a relaxation: it needs a justification and a review, and the lead's audit lists it."""
    case = accept(lead, "admin-retire")
    case.status = CaseStatus.RETIRED
    try:
        case_admin_save(case=case, actor=lead)
    except ValidationError:
        return  # refused: the admin is no back door
    event = AuditEvent.objects.get(case=case, action=AuditAction.RETIRED)
    assert event.classification == Classification.RELAXING, "an admin retirement is not classified relaxing"
    assert event.pk in {r["id"] for r in run_audit_report("--relaxed", "--json")}


def test_the_admin_cannot_reopen_an_accepted_case_as_a_draft_to_skip_justifications(lead):
    """Moving an accepted case back to draft in the admin must not let its content be relaxed
    without the justification a revision would need."""
    case = accept(lead, "admin-reopen")
    case.status = CaseStatus.DRAFT
    try:
        case_admin_save(case=case, actor=lead)
    except ValidationError:
        return  # refused: the admin is no back door
    case.refresh_from_db()
    with pytest.raises(CaseProblems):
        case_update(case=case, user=lead, content=relaxed_content(case))
