"""Load the demo: users for each role, strata and sample cases. Safe to run again."""

import io
import json
import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand
from django.db import transaction

from cases import roles
from cases.auditctx import audit_context
from cases.models import Case, Stratum, Target, TargetKind
from cases.services import cases_import

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"

# username -> (roles, is_staff)
DEMO_USERS = {
    "erin": ((roles.EXPERT,), False),
    "eli": ((roles.EXPERT,), False),
    "riley": ((roles.REVIEWER,), False),
    "rowan": ((roles.REVIEWER,), False),
    "lee": ((roles.LEAD,), True),
}

DEMO_STRATA = [
    ("Payments: facts", ["payments", "fact"], "Payment terms and discounts of customer agreements."),
    ("Freight: policy", ["freight", "policy"], "Who may grant freight credits, and how."),
    ("Returns: facts", ["returns", "fact"], "Return windows, restocking fees and warranties."),
    ("Shipping: facts", ["shipping", "fact"], "Cut-off times, hazardous goods, surcharges."),
    ("Accounts: policy", ["accounts", "policy"], "Credit limits and approvals."),
    ("Pricing: facts", ["pricing", "fact"], "Pricing tiers and discounts."),
    ("Catalogue: facts", ["catalogue", "fact"], "Products and their specifications."),
    ("General: policy", ["general", "policy"], "How the assistant speaks and behaves."),
    ("Refusals", ["refusal"], "Questions the assistant must decline."),
    ("Clarifications", ["clarification"], "Questions the assistant must ask about first."),
    ("Invariants", ["invariant"], "Properties that hold under every configuration."),
]

# Sample cases arrive in several states so every page has something to show.
# Cases not named here are imported as accepted by the lead.
DEMO_STATUS = {
    "northline-terms": ("proposed", "erin"),
    "weak-greeting": ("proposed", "eli"),
}
DRAFT_EXAMPLE = {
    "id": "returns-window-draft",
    "question": "How long do customers have to return unopened stock?",
    "tags": ["returns", "fact"],
    "expectations": [{"kind": "must-contain", "value": "30 days"}],
    "source": {"kind": "expert"},
}


def demo_password() -> str:
    return os.environ.get("DEMO_PASSWORD", "review-demo-2026")


class Command(BaseCommand):
    help = "Load demo users, strata and sample cases (idempotent)."

    def handle(self, *args, **options):
        with transaction.atomic(), audit_context("cli", command="load_demo"):
            users = self._users()
            self._strata()
            self._targets()
            created = self._cases(users)
        password = demo_password()
        self.stdout.write(
            self.style.SUCCESS(f"demo loaded ({created} new case(s)). Sign in with password {password!r} as:")
        )
        for name, (role_names, _) in DEMO_USERS.items():
            self.stdout.write(f"  {name:6} {', '.join(role_names)}")

    def _users(self):
        User = get_user_model()
        users = {}
        for name, (role_names, is_staff) in DEMO_USERS.items():
            user, created = User.objects.get_or_create(username=name, defaults={"is_staff": is_staff})
            if created:
                user.set_password(demo_password())
                user.email = f"{name}@example.com"
                user.save()
            user.groups.add(*[Group.objects.get(name=r) for r in role_names])
            users[name] = user
        # Leads use the admin for targets, strata and audit; give the group its permissions.
        lead = Group.objects.get(name=roles.LEAD)
        lead.permissions.add(*Permission.objects.filter(content_type__app_label="cases"))
        return users

    def _strata(self):
        for name, tags, description in DEMO_STRATA:
            Stratum.objects.get_or_create(name=name, defaults={"tags": tags, "description": description})

    def _targets(self):
        # The bundled demo checks new proposals; the same system over HTTP, served by
        # this app, shows the protocol path (loopback is allowed for it explicitly).
        Target.objects.get_or_create(name="demo", defaults={"kind": TargetKind.DEMO, "is_default": True})
        port = os.environ.get("PORT", "8000")
        Target.objects.get_or_create(
            name="demo-http",
            defaults={
                "kind": TargetKind.HTTP,
                "url": f"http://127.0.0.1:{port}/demo-target/answer",
                "allowed_hosts": ["127.0.0.1"],
                "timeout": 10.0,
            },
        )

    def _cases(self, users) -> int:
        lines = [
            json.loads(line)
            for line in (DEMO_DIR / "cases.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        lines.append(DRAFT_EXAMPLE)
        existing = set(Case.objects.filter(slug__in=[c["id"] for c in lines]).values_list("slug", flat=True))
        groups: dict[tuple[str, str], list[dict]] = {}
        for case in lines:
            if case["id"] in existing:
                continue
            status, owner = DEMO_STATUS.get(case["id"], ("accepted", "lee"))
            if case is DRAFT_EXAMPLE:
                status, owner = "draft", "erin"
            groups.setdefault((status, owner), []).append(case)
        created = 0
        for (status, owner), cases in groups.items():
            data = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases).encode()
            result = cases_import(stream=io.BytesIO(data), user=users[owner], status=status, filename="demo")
            created += result.created
        return created
