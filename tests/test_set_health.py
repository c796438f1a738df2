"""The set's own health through the app: leakage gate on releases, near-duplicate
report, coverage dashboard."""

import io

import pytest
from django.core.cache import cache

from cases.models import LeakFinding, PromptArtifact
from cases.services import cases_import, leaks, releases
from tests.conftest import case_obj, jsonl

pytestmark = pytest.mark.django_db

QUESTION = "What are the payment terms agreed with Northline Industrial for 2026?"


@pytest.fixture
def accepted(lead):
    cases_import(
        stream=jsonl(
            case_obj("leaky", question=QUESTION),
            case_obj("clean", question="Which warehouses ship hazardous goods on Saturdays?"),
        ),
        user=lead,
        status="accepted",
    )


def upload(lead, text: str) -> PromptArtifact:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(leaks, "_enqueue_scan", lambda case_ids: None)  # scanned below, in this process
        return leaks.artifact_upload(user=lead, name="few-shot.jsonl", kind="few-shot", data=text.encode())


def test_a_leaked_case_is_found_marked_and_held_back_until_cleared(accepted, lead, client):
    artifact = upload(
        lead,
        '{"messages": [{"role": "user", "content": "what are the payment terms agreed with '
        'northline industrial for 2026"}, {"role": "assistant", "content": "Net 45."}]}\n',
    )
    assert leaks.leaks_scan() == 1
    finding = LeakFinding.objects.get()
    assert (finding.case.slug, finding.artifact, finding.kind) == ("leaky", artifact, "question")
    assert finding.score >= 90 and finding.offset > 0
    client.force_login(lead)
    assert 'id="leaked"' in client.get("/cases/leaky/").content.decode()
    assert 'id="leaked"' not in client.get("/cases/clean/").content.decode()
    release = releases.release_create(user=lead)
    assert [i.case_slug for i in release.items.all()] == ["clean"]
    assert release.changelog["heldBack"][0]["caseId"] == "leaky"
    with pytest.raises(leaks.ArtifactRefused):
        leaks.leak_clear(finding=finding, user=lead, reason="  ")
    leaks.leak_clear(finding=finding, user=lead, reason="the few-shot file is only used offline")
    assert leaks.leaks_scan() == 1  # found again, but the cleared finding stays cleared
    second = releases.release_create(user=lead)
    assert sorted(i.case_slug for i in second.items.all()) == ["clean", "leaky"]
    assert second.changelog["added"] == ["leaky"]


def test_unrelated_artifacts_leak_nothing(accepted, lead):
    upload(lead, "You are a helpful assistant for a bakery. Answer questions about bread and opening hours.")
    assert leaks.leaks_scan() == 0


def test_only_leads_upload_and_bad_files_are_refused(accepted, lead, reviewer):
    with pytest.raises(leaks.PermissionDenied):
        leaks.artifact_upload(user=reviewer, name="x", kind="other", data=b"text")
    with pytest.raises(leaks.ArtifactRefused, match="not UTF-8"):
        leaks.artifact_upload(user=lead, name="x", kind="other", data=b"\xff\xfe\x00bad")
    with pytest.raises(leaks.ArtifactRefused, match="empty"):
        leaks.artifact_upload(user=lead, name="x", kind="other", data=b"   ")
    assert not PromptArtifact.objects.exists()


def test_near_duplicate_report_groups_planted_duplicates(lead, client):
    cache.clear()
    cases_import(
        stream=jsonl(
            case_obj("dup-a", question="How long do customers have to return unopened stock?"),
            case_obj("dup-b", question="How long do customers have to return unopened stock ?!"),
            case_obj(
                "dup-c", question="how long do customers have to return unopened stock", source={"kind": "synthetic"}
            ),
            case_obj("other", question="Which carriers deliver to Alaska on weekends?"),
        ),
        user=lead,
        status="draft",
    )
    client.force_login(lead)
    page = client.get("/health/duplicates/").content.decode()
    assert "dup-a" in page and "dup-b" in page and "dup-c" in page
    groups = page.split('id="groups"')[1]
    assert "other" not in groups.split("</ul>")[0]


def test_coverage_dashboard_draws_charts(lead, client):
    cases_import(
        stream=io.BytesIO(
            jsonl(
                case_obj("c1", source={"kind": "trace"}),
                case_obj("c2", source={"kind": "synthetic"}, invariant=True),
                case_obj(
                    "c3",
                    tags=["general", "refusal"],
                    expectations=[{"kind": "behaviour", "value": {"abstains": True}, "why": "out of scope"}],
                ),
            ).getvalue()
        ),
        user=lead,
        status="accepted",
    )
    client.force_login(lead)
    page = client.get("/coverage/").content.decode()
    assert page.count("<svg") >= 3
    assert "33.3%" in page  # one of three must refuse; one of three is an invariant
    trace, synthetic = page.index(">trace<"), page.index(">synthetic<")
    assert trace < synthetic
