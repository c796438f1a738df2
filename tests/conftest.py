"""Personas and helpers shared by the tests. Every test talks to real PostgreSQL."""

from __future__ import annotations

import io
import json

import pytest

from cases import roles


def make_user(username: str, *role_names: str, **extra):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(username=username, password="pw-" + username, **extra)
    for name in role_names:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@pytest.fixture
def expert(db):
    return make_user("expert", roles.EXPERT)


@pytest.fixture
def second_expert(db):
    return make_user("expert2", roles.EXPERT)


@pytest.fixture
def reviewer(db):
    return make_user("reviewer", roles.REVIEWER)


@pytest.fixture
def lead(db):
    return make_user("lead", roles.LEAD, is_staff=True)


@pytest.fixture
def outsider(db):
    return make_user("outsider")


def case_obj(case_id: str = "northline-terms", **overrides) -> dict:
    """A valid case in the interchange format."""
    obj = {
        "id": case_id,
        "question": "What are Northline's payment terms?",
        "tags": ["payments", "fact"],
        "expectations": [
            {"kind": "must-contain", "value": "45", "why": "the term itself; any phrasing"},
            {"kind": "must-not-contain", "value": "30", "why": "the superseded 2024 term", "match": "normalized"},
            {"kind": "must-cite", "documentId": "supply-agreement-northline-2026", "why": "provenance"},
            {
                "kind": "behaviour",
                "value": {"abstains": False, "neverCallsTool": ["apply_credit"]},
                "why": "answerable",
            },
        ],
    }
    obj.update(overrides)
    return obj


def jsonl(*objs, raw_lines: tuple[bytes, ...] = ()) -> io.BytesIO:
    data = b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in objs) + b"".join(raw_lines)
    return io.BytesIO(data)


@pytest.fixture(scope="session", autouse=True)
def _end_other_database_sessions(django_db_setup, django_db_blocker):
    """Workers, live-server threads and check threads may still hold connections to the
    test database when the session ends; end them so the database can be dropped."""
    yield
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker):
    """A real Celery worker process on the test database, shared by the session."""
    from django.conf import settings

    from tests.support import WorkerProcess

    worker = WorkerProcess(settings.DATABASES["default"]["NAME"])
    yield worker
    worker.stop()


@pytest.fixture
def scripted_target():
    from tests.support import ScriptedTarget

    server = ScriptedTarget()
    yield server
    server.close()


def demo_case(case_id: str) -> dict:
    """A sample case of the bundled demo, by id."""
    from cases.management.commands.load_demo import DEMO_DIR

    for line in (DEMO_DIR / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip() and json.loads(line)["id"] == case_id:
            return json.loads(line)
    raise KeyError(case_id)
