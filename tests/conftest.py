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
        user.groups.add(Group.objects.get(name=name))
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
