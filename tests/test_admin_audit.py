"""Edits through the Django admin are validated and audited like any other."""

import json

import pytest

from cases.models import AuditEvent, Case
from cases.services import cases_import
from tests.conftest import case_obj, jsonl

pytestmark = pytest.mark.django_db


def admin_form(case: Case, **changes) -> dict:
    data = {
        "slug": case.slug,
        "question": case.question,
        "tags": ",".join(case.tags),
        "status": case.status,
        "source_kind": case.source_kind,
        "source_ref": case.source_ref,
        "context": json.dumps(case.context),
        "rubric": json.dumps(case.rubric),
        "expectations": json.dumps(case.expectations),
        "phrasings": json.dumps(case.phrasings),
        "wrong_answers": json.dumps(case.wrong_answers),
        "proposer": case.proposer_id,
        "justification": "",
    }
    data.update(changes)
    return data


def test_an_admin_edit_is_recorded_with_its_classification_and_justification(client, lead, expert):
    cases_import(stream=jsonl(case_obj("adm")), user=expert)
    case = Case.objects.get(slug="adm")
    expectations = case.expectations[:1] + case.expectations[2:]  # drop the must-not-contain
    client.force_login(lead)
    response = client.post(
        f"/admin/cases/case/{case.pk}/change/",
        admin_form(
            case,
            tags="payments,fact,northline",
            expectations=json.dumps(expectations),
            justification="the 2024 term is out of the corpus",
        ),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    removed = AuditEvent.objects.get(case=case, action="expectation-removed")
    assert (removed.classification, removed.justification) == ("relaxing", "the 2024 term is out of the corpus")
    assert removed.context["interface"] == "admin"
    tags = AuditEvent.objects.get(case=case, action="tags-changed")
    assert tags.justification == "the 2024 term is out of the corpus"


def test_the_admin_refuses_content_the_validator_refuses(client, lead, expert):
    cases_import(stream=jsonl(case_obj("adm2")), user=expert)
    case = Case.objects.get(slug="adm2")
    bad = [{"kind": "must-include", "value": "45", "why": "x"}]
    client.force_login(lead)
    response = client.post(f"/admin/cases/case/{case.pk}/change/", admin_form(case, expectations=json.dumps(bad)))
    assert response.status_code == 200
    assert "must-include" in response.content.decode()
    assert Case.objects.get(pk=case.pk).expectations == case.expectations
