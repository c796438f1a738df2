"""Case versions and audit events are append-only, enforced by PostgreSQL itself."""

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError

from cases.models import AuditEvent, CaseVersion
from cases.services import cases_import
from tests.conftest import case_obj, jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def accepted(lead):
    cases_import(stream=jsonl(case_obj("locked")), user=lead, status="accepted")
    return CaseVersion.objects.get(case__slug="locked")


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE cases_caseversion SET content_hash = repeat('0', 64)",
        "DELETE FROM cases_caseversion",
        "UPDATE cases_auditevent SET justification = 'rewritten'",
        "DELETE FROM cases_auditevent",
    ],
)
def test_raw_sql_cannot_rewrite_history(accepted, sql):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql)
    assert CaseVersion.objects.filter(content_hash=accepted.content_hash).count() == 1
    assert AuditEvent.objects.filter(justification="rewritten").count() == 0


def test_the_orm_cannot_rewrite_history_either(accepted):
    accepted.note = "changed"
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        accepted.save()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(case__slug="locked").delete()


def test_appending_still_works(accepted, lead):
    CaseVersion.objects.create(
        case=accepted.case,
        number=2,
        canonical_json="{}",
        content_hash="a" * 64,
        accepted_by=lead,
        accepted_at=accepted.accepted_at,
    )
    assert CaseVersion.objects.filter(case=accepted.case).count() == 2
