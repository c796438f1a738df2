import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from cases import roles

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.django_db
def test_role_groups_exist_after_migrate():
    assert set(Group.objects.values_list("name", flat=True)) >= {"expert", "reviewer", "lead"}


@pytest.mark.django_db
def test_a_lead_can_do_what_a_reviewer_can_and_outsiders_nothing(expert, reviewer, lead, outsider):
    assert roles.can_propose(expert) and not roles.can_review(expert)
    assert roles.can_review(reviewer) and not roles.can_propose(reviewer) and not roles.is_lead(reviewer)
    assert roles.can_review(lead) and roles.can_propose(lead) and roles.is_lead(lead)
    assert not (roles.can_review(outsider) or roles.can_propose(outsider) or roles.is_lead(outsider))


@pytest.mark.django_db
def test_inactive_users_have_no_role(lead):
    lead.is_active = False
    assert roles.role_names(lead) == frozenset()


def test_production_settings_pass_check_deploy_with_no_warnings():
    relaxed_for_tests = {
        "SECURE_SSL_REDIRECT",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "STATIC_MANIFEST",
        "DJANGO_ALLOW_ASYNC_UNSAFE",  # set by the browser tests for their own process only
    }
    env = {
        **{k: v for k, v in os.environ.items() if k not in relaxed_for_tests},
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "review.example.com",
    }
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout


def test_production_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "SECRET_KEY_FILE"}} | {"DEBUG": "0"}
    out = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode != 0
    assert "SECRET_KEY" in out.stderr
