"""The propose -> review -> accept flow through the views and the services.

Every rule is checked twice: the view answers with the right status code, and the
service refuses the same thing when called directly, so permissions never live only in
the templates. Real PostgreSQL throughout; checks run in this process on the demo
target (no Celery worker).
"""

from __future__ import annotations

import base64
import json
import re
import threading
from datetime import timedelta
from html import unescape
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from cases import canonical, roles
from cases.models import (
    AuditAction,
    AuditEvent,
    Case,
    CaseStatus,
    CaseVersion,
    CheckRun,
    Classification,
    Review,
    Stratum,
    Target,
    TargetKind,
    Verdict,
)
from cases.services import cases_import, checks
from cases.services.lifecycle import CaseProblems, can_edit, case_create, case_submit, case_update
from cases.services.review import AlreadyDecided, DecisionRefused, Marks, can_decide, gather, review_decide
from cases.services.strata import stratum_save
from tests.conftest import case_obj, demo_case, jsonl, make_user

LOGIN = reverse("login")
STRATUM = ("Payments: facts", ["payments", "fact"])


# -- fixtures and helpers ---------------------------------------------------------------


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Personas are created in almost every test; the production hasher would dominate the runtime."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def no_enqueue(monkeypatch):
    """Nothing goes to Redis: there is no worker in these tests."""
    sent: list[list[int]] = []
    monkeypatch.setattr(checks, "enqueue", lambda ids, target: sent.append(list(ids)))
    return sent


def login(user) -> Client:
    client = Client()
    if user is not None and getattr(user, "is_authenticated", False):
        client.force_login(user)
    return client


def form_data(content: dict, action: str = "save", **extra) -> dict:
    """The editor's POST fields for a case in the interchange format (the reverse of forms.content_from_post)."""
    data: dict = {
        "action": action,
        "id": content.get("id", ""),
        "question": content.get("question", ""),
        "tags": ", ".join(content.get("tags", [])),
    }
    if content.get("invariant"):
        data["invariant"] = "on"
    source = content.get("source") or {}
    if source:
        data["source_kind"] = source.get("kind", "")
        data["source_ref"] = source.get("ref", "")
    ctx = content.get("context") or {}
    data["expected_sources"] = ", ".join(ctx.get("expectedSources", []))
    data["allowed_tools"] = ", ".join(ctx.get("allowedTools", []))
    data["rubric"] = "\n".join(content.get("rubric", []))
    expectations = content.get("expectations", [])
    data["exp-row"] = [str(i) for i in range(len(expectations))]
    for i, exp in enumerate(expectations):
        p = f"exp-{i}-"
        data[p + "kind"] = exp.get("kind", "")
        if exp.get("kind") in ("must-contain", "must-not-contain"):
            data[p + "value"] = exp.get("value", "")
            data[p + "match"] = exp.get("match", "normalized")
            data[p + "threshold"] = str(exp.get("threshold", ""))
        elif exp.get("kind") == "must-cite":
            data[p + "document"] = exp.get("documentId", "")
        elif exp.get("kind") == "behaviour":
            value = exp.get("value", {})
            for key, field in (
                ("abstains", "abstains"),
                ("asksClarification", "asks"),
                ("requiresConfirmation", "confirm"),
            ):
                if key in value:
                    data[p + field] = "true" if value[key] else "false"
            data[p + "calls"] = ", ".join(value.get("callsTool", []))
            data[p + "never"] = ", ".join(value.get("neverCallsTool", []))
            data[p + "maxsteps"] = str(value.get("maxSteps", ""))
        data[p + "why"] = exp.get("why", "")
    for prefix, key in (("phr", "phrasings"), ("wrong", "wrongAnswers")):
        responses = content.get(key, [])
        data[f"{prefix}-row"] = [str(i) for i in range(len(responses))]
        for i, resp in enumerate(responses):
            data[f"{prefix}-{i}-answer"] = resp.get("answer", "")
            data[f"{prefix}-{i}-citations"] = ", ".join(resp.get("citations", []))
            data[f"{prefix}-{i}-tools"] = ", ".join(c["name"] for c in resp.get("toolCalls", []))
    data.update(extra)
    return data


def orm_case(user, obj: dict, status: str = CaseStatus.DRAFT, **fields) -> Case:
    """A case row owned by ``user`` whatever their role (the services would refuse to make it)."""
    values = canonical.fields_from_content(obj)
    _, digest = canonical.hash_content(canonical.content_from_fields(**values))
    return Case.objects.create(**values, status=status, proposer=user, content_hash=digest, **fields)


def propose(user, obj: dict) -> Case:
    """Create and submit through the services, as the editor does."""
    return case_submit(case=case_create(user=user, content=obj), user=user)


def decide_data(case: Case, decision: str, *, comment: str = "checked against the agreement", **kw) -> dict:
    required = kw.pop("required", True)
    item4 = kw.pop("item4", "pass")
    overrides = kw.pop("overrides", {})
    assert not kw
    data = {
        "decision": decision,
        "comment": comment,
        "round": str(case.review_round),
        "content_hash": case.content_hash,
    }
    if required:
        data |= {f"required-{i}": "on" for i in range(len(case.expectations))}
    if item4:
        data["item-4"] = item4
    data |= {f"override-{n}": reason for n, reason in overrides.items()}
    return data


def full_marks(case: Case, **overrides: str) -> Marks:
    return Marks(
        required=dict.fromkeys(range(len(case.expectations)), True),
        volatility_ok=True,
        overrides={int(k.split("_")[1]): v for k, v in overrides.items()},
    )


def make_stratum(name: str = STRATUM[0], tags=None) -> Stratum:
    return Stratum.objects.create(name=name, tags=list(tags or STRATUM[1]))


def make_demo_target() -> Target:
    return Target.objects.create(
        name="demo", kind=TargetKind.DEMO, is_default=True, timeout=2.0, retries=1, allowed_hosts=["127.0.0.1"]
    )


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of <a> elements by href."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def find(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def text_of(response) -> str:
    return unescape(response.content.decode())


def queue_slugs(response) -> list[str]:
    return re.findall(r'href="/review/([^/"]+)/"', response.content.decode())


def next_link(response) -> str | None:
    for attrs in Elements(response.content.decode()).find("a"):
        if attrs.get("class") == "button" and "after=" in (attrs.get("href") or ""):
            return attrs["href"]
    return None


def assert_login_redirect(response) -> None:
    assert response.status_code == 302
    assert response["Location"].startswith(LOGIN)


# -- the role x action matrix -------------------------------------------------------------

PERSONAS = ("expert", "second_expert", "reviewer", "lead", "outsider", "anonymous")
OK, REDIRECT, LOGIN_REQ = 200, "redirect", "login"


@pytest.fixture
def world(db, expert, second_expert, reviewer, lead, outsider):
    third = make_user("expert3", roles.EXPERT)
    make_stratum()
    make_demo_target()
    proposed = propose(third, demo_case("northline-terms"))
    others_draft = case_create(user=third, content=case_obj("others-draft"))
    users = {
        "expert": expert,
        "second_expert": second_expert,
        "reviewer": reviewer,
        "lead": lead,
        "outsider": outsider,
        "anonymous": AnonymousUser(),
    }
    return SimpleNamespace(users=users, third=third, proposed=proposed, others_draft=others_draft, own={})


def own_draft(w, persona: str) -> Case:
    """A draft whose proposer is the persona (made directly in the database for non-proposers)."""
    if persona in w.own:
        return w.own[persona]
    user = w.users[persona]
    if persona == "anonymous":
        case = w.others_draft
    elif roles.can_propose(user):
        case = case_create(user=user, content=case_obj(f"own-{persona.replace('_', '-')}"))
    else:
        case = orm_case(user, case_obj(f"own-{persona}"))
    w.own[persona] = case
    return case


def _decide(decision):
    def view(c, w, p):
        case = w.proposed
        data = decide_data(case, decision, overrides={2: "demo target checked by hand"})
        return c.post(reverse("cases:decide", args=[case.slug]), data)

    def service(w, user):
        case = w.proposed
        review_decide(
            case=case,
            user=user,
            decision=decision,
            comment="no",
            round=case.review_round,
            content_hash=case.content_hash,
            marks=full_marks(case, item_2="by hand"),
        )

    return view, service


def _edited(case: Case) -> dict:
    return form_data(canonical.content_of_case(case) | {"question": case.question + " (edited)"})


ACTIONS = {
    # name: (view call, service call that must refuse the wrong roles, expected per persona)
    "home": (lambda c, w, p: c.get(reverse("cases:home")), None, (OK, OK, OK, OK, OK, LOGIN_REQ)),
    "case list": (lambda c, w, p: c.get(reverse("cases:list")), None, (OK, OK, OK, OK, 404, LOGIN_REQ)),
    "case page": (
        lambda c, w, p: c.get(reverse("cases:detail", args=[w.proposed.slug])),
        None,
        (OK, OK, OK, OK, 404, LOGIN_REQ),
    ),
    "propose page": (lambda c, w, p: c.get(reverse("cases:propose")), None, (OK, OK, 403, OK, 404, LOGIN_REQ)),
    "create draft": (
        lambda c, w, p: c.post(reverse("cases:propose"), form_data(case_obj("brand-new"))),
        lambda w, u: case_create(user=u, content=case_obj("brand-new")),
        (REDIRECT, REDIRECT, 403, REDIRECT, 404, LOGIN_REQ),
    ),
    "edit own draft": (
        lambda c, w, p: c.post(reverse("cases:edit", args=[own_draft(w, p).slug]), _edited(own_draft(w, p))),
        lambda w, u: case_update(case=own_draft(w, w.persona), user=u, content=case_obj("x", question="changed")),
        (REDIRECT, REDIRECT, 403, REDIRECT, 404, LOGIN_REQ),
    ),
    "edit someone else's draft": (
        lambda c, w, p: c.post(reverse("cases:edit", args=[w.others_draft.slug]), _edited(w.others_draft)),
        lambda w, u: case_update(case=w.others_draft, user=u, content=case_obj("x", question="changed")),
        (403, 403, 403, 403, 404, LOGIN_REQ),
    ),
    "submit own draft": (
        lambda c, w, p: c.post(
            reverse("cases:edit", args=[own_draft(w, p).slug]),
            form_data(canonical.content_of_case(own_draft(w, p)), action="submit"),
        ),
        lambda w, u: case_submit(case=own_draft(w, w.persona), user=u),
        (REDIRECT, REDIRECT, 403, REDIRECT, 404, LOGIN_REQ),
    ),
    "review queue": (lambda c, w, p: c.get(reverse("cases:queue")), None, (403, 403, OK, OK, 404, LOGIN_REQ)),
    "review page": (
        lambda c, w, p: c.get(reverse("cases:review", args=[w.proposed.slug])),
        None,
        (403, 403, OK, OK, 404, LOGIN_REQ),
    ),
    **{
        f"decide {d}": (*_decide(d), (403, 403, REDIRECT, REDIRECT, 404, LOGIN_REQ))
        for d in ("approve", "request-changes", "reject")
    },
    "rerun check": (
        lambda c, w, p: c.post(reverse("cases:check-rerun", args=[w.proposed.slug])),
        lambda w, u: checks.check_request(case=w.proposed, user=u, rerun=True, dispatch=False),
        (403, 403, REDIRECT, REDIRECT, 404, LOGIN_REQ),
    ),
    "strata page": (
        lambda c, w, p: c.get(reverse("cases:strata")),
        lambda w, u: stratum_save(stratum=Stratum(name="sneaky", tags=["x"]), user=u),
        (403, 403, 403, OK, 404, LOGIN_REQ),
    ),
    "targets page": (
        lambda c, w, p: c.get(reverse("cases:targets")),
        lambda w, u: checks.target_save(target=Target(name="sneaky", kind=TargetKind.DEMO), user=u),
        (403, 403, 403, OK, 404, LOGIN_REQ),
    ),
    "import page": (
        lambda c, w, p: c.get(reverse("cases:import")),
        # The page imports as accepted too, which only leads may do.
        lambda w, u: cases_import(stream=jsonl(case_obj("sneaky")), user=u, status=CaseStatus.ACCEPTED),
        (403, 403, 403, OK, 404, LOGIN_REQ),
    ),
}

MATRIX = [
    pytest.param(action, persona, expected[i], id=f"{action}-{persona}")
    for action, (_, _, expected) in ACTIONS.items()
    for i, persona in enumerate(PERSONAS)
]


@pytest.mark.parametrize(("action", "persona", "expected"), MATRIX)
def test_role_action_matrix(world, action, persona, expected):
    view, service, _ = ACTIONS[action]
    world.persona = persona
    user = world.users[persona]
    reviews_before = Review.objects.count()
    response = view(login(user), world, persona)
    if expected == LOGIN_REQ:
        assert_login_redirect(response)
    elif expected == REDIRECT:
        assert response.status_code == 302, response.content[:500]
        assert not response["Location"].startswith(LOGIN)
    else:
        assert response.status_code == expected
    if expected in (403, 404, LOGIN_REQ):
        # Nothing happened, and the service refuses the same thing when called directly.
        assert Review.objects.count() == reviews_before
        if service is not None:
            with pytest.raises(PermissionDenied):
                service(world, user)


def test_an_outsider_sees_the_no_role_note_and_nothing_else(world):
    response = login(world.users["outsider"]).get(reverse("cases:home"))
    assert "Your account has no role yet" in response.content.decode()
    assert world.proposed.question not in text_of(response)


def test_the_home_page_title_is_plain_text_for_every_role(world):
    for persona in ("expert", "reviewer", "lead", "outsider"):
        body = login(world.users[persona]).get(reverse("cases:home")).content.decode()
        (title,) = re.findall(r"<title>(.*?)</title>", body, re.S)
        assert " ".join(title.split()) == "Home · Case review", (persona, title)


def test_password_login_of_a_persona_works(world):
    client = Client()
    assert client.login(username="reviewer", password="pw-reviewer")
    assert client.get(reverse("cases:queue")).status_code == 200


@pytest.mark.parametrize("decision", ["approve", "request-changes", "reject"])
def test_allowed_decisions_are_recorded(world, decision):
    response = login(world.users["reviewer"]).post(
        reverse("cases:decide", args=[world.proposed.slug]),
        decide_data(world.proposed, decision, overrides={2: "checked by hand"}),
    )
    assert response.status_code == 302
    review = Review.objects.get(case=world.proposed)
    assert (review.decision, review.reviewer.username, review.round) == (decision, "reviewer", 1)
    world.proposed.refresh_from_db()
    expected = {"approve": "accepted", "request-changes": "changes-requested", "reject": "rejected"}[decision]
    assert world.proposed.status == expected


# -- who edits what ---------------------------------------------------------------------


@pytest.mark.django_db
class TestEditing:
    @pytest.mark.parametrize(
        ("status", "editable"),
        [
            (CaseStatus.DRAFT, True),
            (CaseStatus.CHANGES_REQUESTED, True),
            (CaseStatus.PROPOSED, False),
            (CaseStatus.ACCEPTED, False),
            (CaseStatus.REJECTED, False),
            (CaseStatus.RETIRED, False),
        ],
    )
    def test_an_expert_edits_own_drafts_and_sent_back_cases_only(self, expert, status, editable):
        extra = {"current_version": 1} if status in (CaseStatus.ACCEPTED, CaseStatus.RETIRED) else {}
        case = orm_case(expert, case_obj("mine"), status=status, **extra)
        client = login(expert)
        page = client.get(reverse("cases:edit", args=[case.slug]))
        post = client.post(reverse("cases:edit", args=[case.slug]), _edited(case))
        assert can_edit(case, expert) is editable
        if editable:
            assert page.status_code == 200
            assert post.status_code == 302
            case.refresh_from_db()
            assert case.question.endswith("(edited)")
        else:
            assert (page.status_code, post.status_code) == (403, 403)
            with pytest.raises(PermissionDenied):
                case_update(case=case, user=expert, content=case_obj("mine", question="weaker"))
            with pytest.raises(PermissionDenied):
                case_submit(case=case, user=expert)
            case.refresh_from_db()
            assert case.question == case_obj()["question"]

    def test_the_id_cannot_be_changed_by_an_edit(self, expert):
        case = case_create(user=expert, content=case_obj("stable-id"))
        data = _edited(case) | {"id": "other-id"}
        assert login(expert).post(reverse("cases:edit", args=[case.slug]), data).status_code == 302
        assert Case.objects.filter(slug="stable-id").exists() and not Case.objects.filter(slug="other-id").exists()

    def test_a_lead_cannot_edit_an_experts_draft(self, expert, lead):
        case = case_create(user=expert, content=case_obj("experts"))
        assert login(lead).get(reverse("cases:edit", args=[case.slug])).status_code == 403
        with pytest.raises(PermissionDenied):
            case_update(case=case, user=lead, content=case_obj("experts", question="lead was here"))


@pytest.mark.django_db
class TestProposerNeverReviewsOwnCase:
    @pytest.fixture
    def expert_lead(self, expert):
        expert.groups.add(Group.objects.get_or_create(name=roles.LEAD)[0])
        expert.groups.add(Group.objects.get_or_create(name=roles.REVIEWER)[0])
        return type(expert).objects.get(pk=expert.pk)  # fresh: no cached role names

    def test_the_service_refuses(self, expert_lead):
        make_stratum()
        case = propose(expert_lead, demo_case("northline-terms"))
        assert roles.can_review(expert_lead) and roles.is_lead(expert_lead)
        assert not can_decide(case, expert_lead)
        for decision in ("approve", "request-changes", "reject"):
            with pytest.raises(PermissionDenied):
                review_decide(
                    case=case,
                    user=expert_lead,
                    decision=decision,
                    comment="looks fine to me",
                    round=1,
                    content_hash=case.content_hash,
                    marks=full_marks(case, item_2="trust me"),
                )
        assert Review.objects.count() == 0

    def test_the_review_page_offers_no_decision_and_says_why(self, expert_lead):
        case = propose(expert_lead, demo_case("northline-terms"))
        client = login(expert_lead)
        response = client.get(reverse("cases:review", args=[case.slug]))
        assert response.status_code == 200
        body = response.content.decode()
        assert 'id="approve"' not in body
        assert 'name="decision"' not in body
        assert "You proposed this case" in body
        assert Elements(body).find("p", id="own-case")
        posted = client.post(
            reverse("cases:decide", args=[case.slug]), decide_data(case, "approve", overrides={2: "x", 5: "x"})
        )
        assert posted.status_code == 403
        case.refresh_from_db()
        assert case.status == CaseStatus.PROPOSED and not Review.objects.exists()

    def test_the_queue_and_home_do_not_offer_it(self, expert_lead, reviewer):
        case = propose(expert_lead, demo_case("northline-terms"))
        client = login(expert_lead)
        assert case.slug not in queue_slugs(client.get(reverse("cases:queue")))
        assert case.slug not in queue_slugs(client.get(reverse("cases:queue"), {"status": "any"}))
        assert (
            f"/cases/{case.slug}/"
            not in client.get(reverse("cases:home")).content.decode().split("Waiting for my review")[1]
        )
        assert case.slug in queue_slugs(login(reviewer).get(reverse("cases:queue")))

    def test_another_reviewer_sees_the_approve_button(self, expert, reviewer):
        case = propose(expert, demo_case("northline-terms"))
        body = login(reviewer).get(reverse("cases:review", args=[case.slug])).content.decode()
        assert 'id="approve"' in body and "You proposed this case" not in body


@pytest.mark.django_db
def test_the_author_of_a_revision_never_reviews_it(expert, reviewer, lead):
    make_stratum()
    case = propose(expert, demo_case("northline-terms"))
    review_decide(
        case=case,
        user=reviewer,
        decision="approve",
        comment="fine",
        round=1,
        content_hash=case.content_hash,
        marks=full_marks(case, item_2="checked by hand"),
    )
    from cases.services.lifecycle import revision_start

    case = revision_start(case=case, user=lead)
    changed = demo_case("northline-terms") | {"tags": ["payments", "fact", "northline"]}
    case = case_update(case=case, user=lead, content=changed)
    case = case_submit(case=case, user=lead)
    assert case.status == CaseStatus.PROPOSED and case.revised_by == lead
    with pytest.raises(PermissionDenied):
        review_decide(
            case=case,
            user=lead,
            decision="approve",
            comment="my own revision is fine",
            round=case.review_round,
            content_hash=case.content_hash,
            marks=full_marks(case, item_2="x"),
        )
    client = login(lead)
    assert case.slug not in queue_slugs(client.get(reverse("cases:queue")))
    assert 'id="approve"' not in client.get(reverse("cases:review", args=[case.slug])).content.decode()
    assert client.post(reverse("cases:decide", args=[case.slug]), decide_data(case, "reject")).status_code == 403
    assert case.slug in queue_slugs(login(reviewer).get(reverse("cases:queue")))


# -- submission -------------------------------------------------------------------------

SUBMIT_GAPS = {
    "missing why and tags": (
        case_obj(
            "gappy",
            tags=[],
            expectations=[
                {"kind": "must-contain", "value": "45"},
                {"kind": "must-cite", "documentId": "supply-agreement-northline-2026", "why": "provenance"},
                {"kind": "must-not-contain", "value": "30"},
            ],
        ),
        [
            "expectations[0].why: is required: say what this assertion protects",
            "expectations[2].why: is required: say what this assertion protects",
            "tags: needs at least one tag outside a draft (tags place a case in a stratum)",
        ],
    ),
    "no expectations and no tags": (
        case_obj("gappy", tags=[], expectations=[]),
        [
            "expectations: needs at least one expectation outside a draft",
            "tags: needs at least one tag outside a draft (tags place a case in a stratum)",
        ],
    ),
}


@pytest.mark.django_db
class TestSubmission:
    @pytest.mark.parametrize("gap", SUBMIT_GAPS)
    def test_submission_lists_every_missing_piece_and_keeps_the_draft(self, expert, gap):
        content, problems = SUBMIT_GAPS[gap]
        client = login(expert)
        response = client.post(reverse("cases:propose"), form_data(content, action="submit"))
        assert response.status_code == 400
        case = Case.objects.get(slug="gappy")
        assert case.status == CaseStatus.DRAFT and case.review_round == 0
        listed = Elements(response.content.decode()).find("section", id="submit-problems")
        assert listed, "the problems box is missing"
        page = text_of(response)
        for problem in problems:
            assert problem in page
        # The same through the edit page, and through the service.
        again = client.post(reverse("cases:edit", args=[case.slug]), form_data(content, action="submit"))
        assert again.status_code == 400
        for problem in problems:
            assert problem in text_of(again)
        with pytest.raises(CaseProblems) as info:
            case_submit(case=case, user=expert)
        assert sorted(str(p) for p in info.value.problems) == sorted(problems)
        case.refresh_from_db()
        assert case.status == CaseStatus.DRAFT
        assert not AuditEvent.objects.filter(case=case, action=AuditAction.STATUS_CHANGED).exists()

    def test_a_missing_why_is_shown_next_to_its_row(self, expert):
        content, _ = SUBMIT_GAPS["missing why and tags"]
        response = login(expert).post(reverse("cases:propose"), form_data(content, action="submit"))
        body = response.content.decode()
        rows = re.findall(r'<fieldset class="expectation" data-index="(\d)">(.*?)</fieldset>', body, re.S)
        by_index = dict(rows)
        assert "why: is required" in by_index["0"]
        assert "why: is required" not in by_index["1"]
        assert "why: is required" in by_index["2"]

    def test_after_fixing_the_draft_submits(self, expert, no_enqueue):
        make_demo_target()
        content, _ = SUBMIT_GAPS["missing why and tags"]
        client = login(expert)
        client.post(reverse("cases:propose"), form_data(content, action="save"))
        case = Case.objects.get(slug="gappy")
        assert case.status == CaseStatus.DRAFT
        fixed = case_obj("gappy")
        response = client.post(reverse("cases:edit", args=[case.slug]), form_data(fixed, action="submit"))
        assert response.status_code == 302
        assert response["Location"] == reverse("cases:detail", args=[case.slug])
        case.refresh_from_db()
        assert (case.status, case.review_round) == (CaseStatus.PROPOSED, 1)
        event = AuditEvent.objects.get(case=case, action=AuditAction.STATUS_CHANGED)
        assert (event.before, event.after, event.actor) == (CaseStatus.DRAFT, CaseStatus.PROPOSED, expert)
        assert event.context.get("interface") == "web"
        # Its check is queued (the enqueue itself waits for the commit).
        assert CheckRun.objects.filter(case=case, content_hash=case.content_hash).count() == 1
        # Proposed now: no more edits.
        assert client.get(reverse("cases:edit", args=[case.slug])).status_code == 403


# -- deciding ---------------------------------------------------------------------------


@pytest.fixture
def proposal(expert):
    make_stratum()
    return propose(expert, demo_case("northline-terms"))


@pytest.mark.django_db
class TestApproval:
    def decide(self, user, case, data):
        return login(user).post(reverse("cases:decide", args=[case.slug]), data)

    def assert_nothing_recorded(self, case):
        case.refresh_from_db()
        assert case.status == CaseStatus.PROPOSED and case.current_version is None
        assert not Review.objects.filter(case=case).exists()
        assert not CaseVersion.objects.filter(case=case).exists()
        assert not AuditEvent.objects.filter(case=case, action=AuditAction.OVERRIDE).exists()

    @pytest.mark.parametrize(
        ("marks", "problems"),
        [
            (
                {"required": False, "overrides": {2: "by hand"}},
                ["item 1: expectation(s) 1, 2, 3, 4 not marked required"],
            ),
            (
                {"item4": "", "overrides": {2: "by hand"}},
                ["item 4: mark whether the case is independent of facts likely to change"],
            ),
            (
                {"item4": "fail", "overrides": {2: "by hand"}},
                ["item 4: mark whether the case is independent of facts likely to change"],
            ),
            (
                {},
                [
                    "item 2: no discrimination check has run on this content yet (override it only with a written reason)"
                ],
            ),
            (
                {"overrides": {2: "   "}},
                [
                    "item 2: no discrimination check has run on this content yet (override it only with a written reason)"
                ],
            ),
            (
                {"required": False, "item4": ""},
                [
                    "item 1: expectation(s) 1, 2, 3, 4 not marked required",
                    "item 4: mark whether the case is independent of facts likely to change",
                    "item 2: no discrimination check has run",
                ],
            ),
        ],
        ids=["item1", "item4-unmarked", "item4-fails", "item2-no-reason", "item2-blank-reason", "all"],
    )
    def test_approve_is_refused_with_the_problems_listed(self, proposal, reviewer, marks, problems):
        response = self.decide(reviewer, proposal, decide_data(proposal, "approve", **marks))
        assert response.status_code == 400
        body = text_of(response)
        assert "Not recorded:" in body
        for problem in problems:
            assert problem in body
        self.assert_nothing_recorded(proposal)

    def test_some_expectations_unmarked_are_named(self, proposal, reviewer):
        data = decide_data(proposal, "approve", overrides={2: "by hand"})
        del data["required-1"], data["required-3"]
        response = self.decide(reviewer, proposal, data)
        assert response.status_code == 400
        assert "item 1: expectation(s) 2, 4 not marked required" in text_of(response)
        # What the reviewer marked is kept on the re-rendered form.
        checked = Elements(response.content.decode()).find("input", name="required-0")
        assert checked and "checked" in checked[0]
        self.assert_nothing_recorded(proposal)

    def test_a_failing_stratum_item_is_refused_without_a_reason(self, expert, reviewer):
        case = propose(expert, demo_case("northline-terms"))  # no stratum defined
        response = self.decide(reviewer, case, decide_data(case, "approve", overrides={2: "by hand"}))
        assert response.status_code == 400
        assert "item 5: no stratum matches these tags" in text_of(response)
        self.assert_nothing_recorded(case)

    def test_the_service_refuses_the_same(self, proposal, reviewer):
        with pytest.raises(DecisionRefused) as info:
            review_decide(
                case=proposal,
                user=reviewer,
                decision="approve",
                comment="ok",
                round=1,
                content_hash=proposal.content_hash,
                marks=Marks(required={0: True}, volatility_ok=True),
            )
        text = "; ".join(info.value.problems)
        assert "item 1: expectation(s) 2, 3, 4 not marked required" in text and "item 2:" in text
        with pytest.raises(DecisionRefused):
            review_decide(
                case=proposal,
                user=reviewer,
                decision="approve",
                comment="  ",
                round=1,
                content_hash=proposal.content_hash,
                marks=full_marks(proposal, item_2="x"),
            )
        with pytest.raises(DecisionRefused):
            review_decide(case=proposal, user=reviewer, decision="merge", comment="x", round=1, content_hash="")
        self.assert_nothing_recorded(proposal)

    def test_a_blank_comment_re_renders_with_the_problem(self, proposal, reviewer):
        response = self.decide(reviewer, proposal, decide_data(proposal, "reject", comment="   "))
        assert response.status_code == 400
        assert "comment: say why" in text_of(response)
        self.assert_nothing_recorded(proposal)

    def test_an_override_with_a_reason_approves_and_is_recorded_as_relaxing(self, proposal, reviewer):
        reason = "the demo target was down; I ran the sabotage by hand and it failed"
        client = login(reviewer)
        response = client.post(
            reverse("cases:decide", args=[proposal.slug]), decide_data(proposal, "approve", overrides={2: reason})
        )
        assert response.status_code == 302
        proposal.refresh_from_db()
        assert (proposal.status, proposal.current_version) == (CaseStatus.ACCEPTED, 1)
        review = Review.objects.get(case=proposal)
        assert (review.decision, review.version, review.round) == ("approve", 1, 1)
        assert review.checklist["2"]["override"] == reason and review.checklist["2"]["passed"] is False
        version = CaseVersion.objects.get(case=proposal)
        assert (version.number, version.review, version.accepted_by) == (1, review, reviewer)
        assert version.content_hash == proposal.content_hash
        assert json.loads(version.canonical_json) == canonical.content_of_case(proposal)
        override = AuditEvent.objects.get(case=proposal, action=AuditAction.OVERRIDE)
        assert override.classification == Classification.RELAXING
        assert override.justification == reason
        assert (override.path, override.version, override.actor) == ("checklist[2]", 1, reviewer)
        assert override.context["review"] == review.pk
        status_event = AuditEvent.objects.get(case=proposal, action=AuditAction.STATUS_CHANGED, after="accepted")
        assert status_event.version == 1
        # A reason for an item that passes is not an override.
        assert AuditEvent.objects.filter(case=proposal, action=AuditAction.OVERRIDE).count() == 1
        # The case page shows version 1 and the reviewer.
        page = text_of(client.get(reverse("cases:detail", args=[proposal.slug])))
        assert "accepted version 1" in page and "approved as version 1" in page

    def test_a_stale_form_is_refused(self, proposal, reviewer):
        with pytest.raises(AlreadyDecided):
            review_decide(
                case=proposal,
                user=reviewer,
                decision="reject",
                comment="no",
                round=1,
                content_hash="0" * 64,
            )
        assert not Review.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_approve_with_all_five_items_passing_needs_no_override(expert, reviewer):
    make_stratum()
    make_demo_target()
    case = propose(expert, demo_case("northline-terms"))
    run = checks.check_request(case=case, dispatch=False)
    assert checks.checks_execute([run.pk]) == 1
    items = gather(case)
    assert {n: items[n].passed for n in (2, 3, 5)} == {2: True, 3: True, 5: True}, {n: items[n].summary for n in items}
    page = login(reviewer).get(reverse("cases:review", args=[case.slug]))
    assert page.status_code == 200 and 'id="approve"' in page.content.decode()
    assert "discriminates" in page.content.decode()
    response = login(reviewer).post(reverse("cases:decide", args=[case.slug]), decide_data(case, "approve"))
    assert response.status_code == 302
    case.refresh_from_db()
    assert case.status == CaseStatus.ACCEPTED
    review = Review.objects.get(case=case)
    assert review.check_run_id == run.pk
    assert all(review.checklist[str(n)]["passed"] for n in (2, 3, 5))
    assert not AuditEvent.objects.filter(case=case, action=AuditAction.OVERRIDE).exists()
    assert CaseVersion.objects.get(case=case).review == review


# -- request changes, resubmit, rounds ----------------------------------------------------


@pytest.mark.django_db
def test_request_changes_then_resubmit_starts_a_new_round(proposal, expert, reviewer):
    old_hash = proposal.content_hash
    response = login(reviewer).post(
        reverse("cases:decide", args=[proposal.slug]),
        decide_data(proposal, "request-changes", comment="add a why for the discount"),
    )
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == CaseStatus.CHANGES_REQUESTED
    assert can_edit(proposal, expert)
    client = login(expert)
    # The comment reaches the proposer, and the case is on their home page.
    assert "add a why for the discount" in text_of(client.get(reverse("cases:detail", args=[proposal.slug])))
    home = client.get(reverse("cases:home")).content.decode()
    assert f"/cases/{proposal.slug}/" in home.split("Changes requested of me")[1]
    assert client.get(reverse("cases:edit", args=[proposal.slug])).status_code == 200
    changed = demo_case("northline-terms")
    changed["expectations"][3]["why"] = "the discount changes what Northline pays"
    resubmit = client.post(reverse("cases:edit", args=[proposal.slug]), form_data(changed, action="submit"))
    assert resubmit.status_code == 302
    proposal.refresh_from_db()
    assert (proposal.status, proposal.review_round) == (CaseStatus.PROPOSED, 2)
    assert proposal.content_hash != old_hash
    # The old round is over, whoever answers it.
    for user, hash_ in ((reviewer, old_hash), (reviewer, proposal.content_hash)):
        with pytest.raises(AlreadyDecided):
            review_decide(case=proposal, user=user, decision="reject", comment="late", round=1, content_hash=hash_)
    stale = login(reviewer).post(
        reverse("cases:decide", args=[proposal.slug]),
        decide_data(proposal, "reject") | {"round": "1"},
    )
    assert stale.status_code == 302
    assert Review.objects.filter(case=proposal).count() == 1
    # Round 2 is decided normally.
    review = review_decide(
        case=proposal,
        user=reviewer,
        decision="approve",
        comment="the why is there now",
        round=2,
        content_hash=proposal.content_hash,
        marks=full_marks(proposal, item_2="checked by hand"),
    )
    assert (review.round, review.version) == (2, 1)


# -- two decisions at once ---------------------------------------------------------------


def decide_at_once(case: Case, *deciders: tuple) -> dict[str, object]:
    """Each (user, decision) calls review_decide in its own thread, released together by a barrier."""
    barrier = threading.Barrier(len(deciders))
    outcomes: dict[str, object] = {}
    round_, content_hash = case.review_round, case.content_hash

    def decide(user, decision):
        try:
            barrier.wait(timeout=10)
            outcomes[user.username] = review_decide(
                case=case,
                user=user,
                decision=decision,
                comment=f"{decision} by {user.username}",
                round=round_,
                content_hash=content_hash,
            )
        except Exception as exc:
            outcomes[user.username] = exc
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=decide, args=pair) for pair in deciders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a decision hung"
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_deciding_at_once_record_exactly_one_decision(expert, reviewer, lead):
    make_stratum()
    case = propose(expert, demo_case("northline-terms"))
    for attempt in range(3):
        other = "reject" if attempt == 2 else "request-changes"
        outcomes = decide_at_once(case, (reviewer, "request-changes"), (lead, other))
        won = [o for o in outcomes.values() if isinstance(o, Review)]
        lost = [o for o in outcomes.values() if isinstance(o, AlreadyDecided)]
        assert (len(won), len(lost)) == (1, 1), outcomes
        assert Review.objects.filter(case=case, round=case.review_round).count() == 1
        case.refresh_from_db()
        assert case.status == {"request-changes": "changes-requested", "reject": "rejected"}[won[0].decision]
        assert (
            AuditEvent.objects.filter(case=case, action=AuditAction.STATUS_CHANGED, context__review=won[0].pk).count()
            == 1
        )
        if case.status == CaseStatus.CHANGES_REQUESTED:
            case = case_submit(case=case, user=expert)
    assert Review.objects.filter(case=case).count() == 3


@pytest.mark.django_db
def test_a_double_click_records_one_decision_and_says_so(proposal, reviewer):
    client = login(reviewer)
    data = decide_data(proposal, "request-changes", comment="needs a second wrong answer")
    first = client.post(reverse("cases:decide", args=[proposal.slug]), data)
    second = client.post(reverse("cases:decide", args=[proposal.slug]), data, follow=True)
    assert first.status_code == 302
    assert second.redirect_chain == [(reverse("cases:detail", args=[proposal.slug]), 302)]
    assert second.status_code == 200
    assert "this submission was already decided by reviewer" in text_of(second)
    assert Review.objects.filter(case=proposal).count() == 1


# -- bad input in the editor ----------------------------------------------------------------

FUZZY = {"kind": "must-contain", "value": "early payment discount", "match": "fuzzy", "why": "the discount"}

BAD_INPUT = {
    "threshold 20": (
        case_obj("bad", expectations=[FUZZY | {"threshold": 20}]),
        "exp-0",
        "threshold: 20 is outside 50..100",
    ),
    "threshold not a number": (
        case_obj("bad", expectations=[FUZZY | {"threshold": "ninety"}]),
        "exp-0",
        "threshold: must be an integer, not string",
    ),
    "uppercase id": (case_obj("Bad-Id"), "id", "is not a valid id"),
    "blank question": (case_obj("bad", question="   "), "question", "must not be empty"),
    "unknown kind": (
        case_obj("bad", expectations=[{"kind": "must-include", "value": "45", "why": "x"}]),
        "exp-0",
        "'must-include' is not one of",
    ),
    "blank value": (
        case_obj("bad", expectations=[{"kind": "must-contain", "value": "  ", "why": "x"}]),
        "exp-0",
        "value: must not be empty or blank",
    ),
    "blank document": (
        case_obj("bad", expectations=[{"kind": "must-cite", "documentId": "", "why": "x"}]),
        "exp-0",
        "document: must not be empty",
    ),
    "fuzzy value too long": (
        case_obj("bad", expectations=[FUZZY | {"value": "x" * 300}]),
        "exp-0",
        "fuzzy values are limited to 256",
    ),
    "max steps not a number": (
        case_obj("bad", expectations=[{"kind": "behaviour", "value": {"maxSteps": "lots"}, "why": "x"}]),
        "exp-0",
        "must be an integer, not string",
    ),
    "tag too long": (case_obj("bad", tags=["t" * 65]), "tags", "is 65 characters; the limit is 64"),
    "duplicate tag": (case_obj("bad", tags=["fact", "fact"]), "tags", "'fact' is listed twice"),
}


@pytest.mark.django_db
class TestBadInput:
    @pytest.mark.parametrize("case_name", BAD_INPUT)
    def test_the_form_comes_back_with_the_problem_next_to_the_field(self, expert, case_name):
        content, where, message = BAD_INPUT[case_name]
        response = login(expert).post(reverse("cases:propose"), form_data(content))
        assert response.status_code == 400
        body = response.content.decode()
        assert message in unescape(body)
        if where.startswith("exp-"):
            index = where.split("-")[1]
            rows = dict(re.findall(r'<fieldset class="expectation" data-index="(\d+)">(.*?)</fieldset>', body, re.S))
            assert message in unescape(rows[index])
            assert 'class="errors field-errors"' in rows[index]
        else:
            field = {"id": 'name="id"', "question": 'name="question"', "tags": 'name="tags"'}[where]
            after_field = body.split(field, 1)[1]
            error = re.search(r'<p class="field-error">(.*?)</p>', after_field)
            assert error and message in unescape(error.group(1))
            # The error follows its own field, before the next section of the form.
            assert after_field.index(error.group(0)) < after_field.index("<h2>Expectations")
        # What was typed is kept.
        assert unescape(body).count(content["question"].strip() or "Question") >= 1
        assert not Case.objects.filter(proposer=expert).exists()

    def test_a_taken_id_is_refused_on_the_form(self, expert, second_expert):
        case_create(user=second_expert, content=case_obj("taken"))
        response = login(expert).post(reverse("cases:propose"), form_data(case_obj("taken")))
        assert response.status_code == 400
        assert "'taken' is taken; choose another id" in text_of(response)

    @pytest.mark.parametrize("case_name", ["threshold 20", "blank question", "blank value"])
    def test_bad_edits_are_refused_too(self, expert, case_name):
        content, _, message = BAD_INPUT[case_name]
        case = case_create(user=expert, content=case_obj("bad"))
        stored = case.content_hash
        response = login(expert).post(reverse("cases:edit", args=[case.slug]), form_data(content))
        assert response.status_code == 400
        assert message in text_of(response)
        case.refresh_from_db()
        assert case.content_hash == stored

    def test_the_no_javascript_row_buttons_work(self, expert):
        content = case_obj("rows")
        client = login(expert)
        added = client.post(reverse("cases:propose"), form_data(content, action="add-exp", kind="must-cite"))
        assert added.status_code == 200
        assert added.content.decode().count('name="exp-row"') == 5
        removed = client.post(reverse("cases:propose"), form_data(content, action="remove-exp-0"))
        assert removed.content.decode().count('name="exp-row"') == 3
        assert not Case.objects.exists()


# -- the editor's htmx endpoints -------------------------------------------------------------


@pytest.mark.django_db
class TestEditorHtmx:
    HX = {"HTTP_HX_REQUEST": "true"}

    @pytest.mark.parametrize(
        ("section", "row", "op", "delta"),
        [
            ("expectations", "exp-row", "add", 1),
            ("expectations", "exp-row", "remove", -1),
            ("phrasings", "phr-row", "add", 1),
            ("phrasings", "phr-row", "remove", -1),
            ("wrong", "wrong-row", "add", 1),
            ("wrong", "wrong-row", "remove", -1),
        ],
    )
    def test_rows_are_added_and_removed_in_place(self, expert, section, row, op, delta):
        content = demo_case("northline-terms")
        data = form_data(content) | {"op": op, "index": "0", "kind": "behaviour"}
        before = len(data[row])
        response = login(expert).post(reverse("cases:editor-rows", args=[section]), data, **self.HX)
        assert response.status_code == 200
        assert "rows-changed" in response["HX-Trigger"]
        body = response.content.decode()
        assert "<html" not in body and "<form" not in body
        assert body.lstrip().startswith(f'<section id="{section}"')
        assert body.count(f'name="{row}"') == before + delta
        if section == "expectations" and op == "add":
            assert 'name="exp-4-never"' in body  # a blank behaviour row
        if section == "expectations" and op == "remove":
            assert "early payment discount" in body and 'value="45"' not in body
        assert not Case.objects.exists()

    def test_an_unknown_section_is_404_and_get_is_refused(self, expert):
        client = login(expert)
        assert client.post(reverse("cases:editor-rows", args=["secrets"]), {"op": "add"}).status_code == 404
        assert client.get(reverse("cases:editor-rows", args=["expectations"])).status_code == 405

    def test_the_scores_panel_scores_every_phrasing_and_wrong_answer(self, expert):
        response = login(expert).post(
            reverse("cases:editor-preview", args=["scores"]), form_data(demo_case("northline-terms")), **self.HX
        )
        assert response.status_code == 200
        body = text_of(response)
        assert body.lstrip().startswith('<div id="scores"')
        assert "Phrasing 1" in body and "Phrasing 2" in body
        assert "Wrong answer 1" in body and "Wrong answer 2" in body
        assert "(should pass)" not in body and "(should fail)" not in body

    def test_the_scores_panel_flags_a_passing_wrong_answer_and_bad_expectations(self, expert):
        client = login(expert)
        content = demo_case("northline-terms")
        content["wrongAnswers"] = [content["phrasings"][0]]
        body = text_of(client.post(reverse("cases:editor-preview", args=["scores"]), form_data(content)))
        assert "(should fail)" in body and "(should pass)" not in body
        content["expectations"].append({"kind": "must-contain", "value": "", "why": "oops"})
        body = text_of(client.post(reverse("cases:editor-preview", args=["scores"]), form_data(content)))
        assert "Expectations incomplete" in body
        assert "expectations[4].value: must not be empty or blank" in body
        assert "the expectations are not valid yet" in body

    def test_the_strata_panel_names_the_stratum(self, expert):
        make_stratum()
        client = login(expert)
        one = text_of(client.post(reverse("cases:editor-preview", args=["strata"]), form_data(case_obj("s"))))
        assert "In one stratum" in one and "Payments: facts" in one
        make_stratum("Facts", ["fact"])
        two = text_of(client.post(reverse("cases:editor-preview", args=["strata"]), form_data(case_obj("s"))))
        assert "In 2 strata" in two
        none = text_of(
            client.post(reverse("cases:editor-preview", args=["strata"]), form_data(case_obj("s", tags=["misc"])))
        )
        assert "These tags match no stratum" in none

    def test_the_similar_panel_finds_near_duplicates(self, expert, second_expert):
        case_create(user=second_expert, content=case_obj("northline-terms"))
        client = login(expert)
        near = client.post(
            reverse("cases:editor-preview", args=["similar"]),
            form_data(case_obj("mine", question="What are Northline's payment terms ?")),
        )
        assert near.status_code == 200
        assert "/cases/northline-terms/" in near.content.decode()
        far = client.post(
            reverse("cases:editor-preview", args=["similar"]),
            form_data(case_obj("mine", question="How do I bake sourdough bread at home?")),
        )
        assert "No similar questions" in text_of(far)
        own = client.post(
            reverse("cases:editor-preview", args=["similar"]),
            form_data(case_obj("northline-terms")) | {"slug": "northline-terms"},
        )
        assert "/cases/northline-terms/" not in own.content.decode()

    def test_an_unknown_panel_is_404(self, expert):
        assert login(expert).post(reverse("cases:editor-preview", args=["secrets"]), {}).status_code == 404

    @pytest.mark.parametrize(
        "url",
        [
            reverse("cases:editor-rows", args=["expectations"]),
            reverse("cases:editor-rows", args=["phrasings"]),
            reverse("cases:editor-rows", args=["wrong"]),
            reverse("cases:editor-preview", args=["scores"]),
            reverse("cases:editor-preview", args=["strata"]),
            reverse("cases:editor-preview", args=["similar"]),
        ],
    )
    def test_they_need_the_proposer_role(self, expert, lead, reviewer, outsider, url):
        data = form_data(case_obj("x")) | {"op": "add"}
        assert login(expert).post(url, data).status_code == 200
        assert login(lead).post(url, data).status_code == 200
        assert login(reviewer).post(url, data).status_code == 403
        assert login(outsider).post(url, data).status_code == 404
        assert_login_redirect(Client().post(url, data))


# -- the review queue ---------------------------------------------------------------------------


def import_proposed(user, *objs) -> None:
    cases_import(stream=jsonl(*objs), user=user, status=CaseStatus.PROPOSED)


@pytest.mark.django_db
class TestQueue:
    @pytest.fixture
    def cases(self, expert, second_expert, lead):
        third = make_user("expert3", roles.EXPERT)
        stratum = make_stratum()
        import_proposed(expert, case_obj("pay-one", source={"kind": "known-hard"}))
        import_proposed(second_expert, case_obj("ret-two", tags=["returns", "fact"], source={"kind": "ticket"}))
        import_proposed(third, case_obj("zeb-three", question="Does the zebra crossing need a permit?", tags=["misc"]))
        import_proposed(lead, case_obj("leads-own", tags=["payments", "fact", "lead"]))
        case_create(user=expert, content=case_obj("just-a-draft"))
        return SimpleNamespace(stratum=stratum, third=third)

    @pytest.mark.parametrize(
        ("params", "expected"),
        [
            ({}, {"pay-one", "ret-two", "zeb-three"}),
            ({"tag": "returns"}, {"ret-two"}),
            ({"tag": "fact"}, {"pay-one", "ret-two"}),
            ({"stratum": "STRATUM"}, {"pay-one"}),
            ({"source": "ticket"}, {"ret-two"}),
            ({"source": "known-hard"}, {"pay-one"}),
            ({"proposer": "expert3"}, {"zeb-three"}),
            ({"proposer": "expert"}, {"pay-one"}),
            ({"q": "zebra"}, {"zeb-three"}),
            ({"q": "RET-"}, {"ret-two"}),
            ({"q": "nothing matches this"}, set()),
            ({"status": "draft"}, {"just-a-draft"}),
            ({"status": "any"}, {"pay-one", "ret-two", "zeb-three", "just-a-draft"}),
            ({"tag": "fact", "source": "ticket"}, {"ret-two"}),
            ({"verdict": "none"}, {"pay-one", "ret-two", "zeb-three"}),
            ({"verdict": "discriminates"}, set()),
        ],
    )
    def test_filters(self, cases, lead, params, expected):
        params = {k: (str(cases.stratum.pk) if v == "STRATUM" else v) for k, v in params.items()}
        response = login(lead).get(reverse("cases:queue"), params)
        assert response.status_code == 200
        slugs = queue_slugs(response)
        assert set(slugs) == expected and len(slugs) == len(expected)
        assert "leads-own" not in slugs  # never one's own

    def test_the_proposers_own_cases_are_not_listed_for_them(self, cases, reviewer, lead):
        assert "leads-own" in queue_slugs(login(reviewer).get(reverse("cases:queue")))
        assert "leads-own" not in queue_slugs(login(lead).get(reverse("cases:queue"), {"q": "leads-own"}))
        assert "leads-own" not in queue_slugs(login(lead).get(reverse("cases:queue"), {"proposer": "lead"}))

    def test_a_queued_check_is_shown_and_filtered_as_not_finished(self, cases, reviewer):
        make_demo_target()
        run = checks.check_request(case=Case.objects.get(slug="pay-one"), dispatch=False)
        assert run.state == "queued"
        client = login(reviewer)
        assert "pay-one" in queue_slugs(client.get(reverse("cases:queue")))
        assert "pay-one" not in queue_slugs(client.get(reverse("cases:queue"), {"verdict": "none"}))
        assert "queued" in client.get(reverse("cases:queue")).content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_queue_filters_by_the_verdict_of_the_current_check(expert, reviewer):
    import_proposed(
        expert, demo_case("northline-terms"), demo_case("weak-greeting"), case_obj("unchecked", tags=["misc"])
    )
    make_demo_target()
    runs = [
        checks.check_request(case=Case.objects.get(slug=s), dispatch=False)
        for s in ("northline-terms", "weak-greeting")
    ]
    assert checks.checks_execute([r.pk for r in runs]) == 2
    client = login(reviewer)

    def slugs(verdict):
        return set(queue_slugs(client.get(reverse("cases:queue"), {"verdict": verdict})))

    assert slugs(Verdict.DISCRIMINATES) == {"northline-terms"}
    assert slugs(Verdict.DOES_NOT_DISCRIMINATE) == {"weak-greeting"}
    assert slugs("none") == {"unchecked"}
    # An edit makes the verdict stale: it no longer counts for the current content.
    changed = demo_case("northline-terms") | {"tags": ["payments", "fact", "edited"]}
    cases_import(stream=jsonl(changed), user=expert, status=CaseStatus.PROPOSED, update=True)
    assert slugs(Verdict.DISCRIMINATES) == set()


@pytest.mark.django_db
class TestQueuePagination:
    N = 60

    @pytest.fixture
    def many(self, second_expert):
        objs = [case_obj(f"case-{i:03d}", tags=["fact", f"t{i % 3}"]) for i in range(self.N)]
        import_proposed(second_expert, *objs)  # one COPY: they share updated_at, so ties break by id
        base = timezone.now()
        for i in range(0, self.N, 3):
            Case.objects.filter(slug=f"case-{i:03d}").update(updated_at=base + timedelta(seconds=i))
        return objs

    def walk(self, client, params):
        url = reverse("cases:queue") + "?" + "&".join(f"{k}={v}" for k, v in params.items())
        seen, pages = [], []
        while url:
            response = client.get(url)
            assert response.status_code == 200
            page = queue_slugs(response)
            pages.append(len(page))
            seen += page
            link = next_link(response)
            url = reverse("cases:queue") + unescape(link) if link else None
            assert len(pages) < 10, "the walk does not end"
        return seen, pages

    @pytest.mark.parametrize(
        ("params", "order"),
        [
            ({}, ("-updated_at", "-id")),
            ({"sort": "oldest"}, ("updated_at", "id")),
            ({"sort": "id"}, ("slug", "id")),
            ({"sort": "updated", "tag": "t1"}, ("-updated_at", "-id")),
        ],
    )
    def test_every_case_exactly_once_in_a_stable_order(self, many, reviewer, params, order):
        seen, pages = self.walk(login(reviewer), params)
        expected = Case.objects.filter(status=CaseStatus.PROPOSED)
        if "tag" in params:
            expected = expected.filter(tags__contains=[params["tag"]])
        expected = list(expected.order_by(*order).values_list("slug", flat=True))
        assert len(seen) == len(set(seen)), "a case was shown twice"
        assert seen == expected
        assert pages == [len(expected[i : i + 25]) for i in range(0, len(expected), 25)]

    def test_a_deep_page_costs_the_same_queries_as_the_first(self, many, reviewer):
        client = login(reviewer)
        client.get(reverse("cases:queue"))  # warm the session and the user
        with CaptureQueriesContext(connection) as first:
            page1 = client.get(reverse("cases:queue"))
        link = next_link(page1)
        page2 = client.get(reverse("cases:queue") + unescape(link))
        link = next_link(page2)
        with CaptureQueriesContext(connection) as deep:
            page3 = client.get(reverse("cases:queue") + unescape(link))
        assert len(queue_slugs(page3)) == 10
        assert len(deep.captured_queries) == len(first.captured_queries), (
            [q["sql"] for q in first.captured_queries],
            [q["sql"] for q in deep.captured_queries],
        )
        # And none of them is an OFFSET scan.
        assert not any("OFFSET" in q["sql"] for q in deep.captured_queries)

    def test_a_garbage_cursor_is_ignored(self, many, reviewer):
        response = login(reviewer).get(reverse("cases:queue"), {"after": "!!not-base64!!"})
        assert response.status_code == 200
        assert len(queue_slugs(response)) == 25


@pytest.mark.django_db
def test_a_tampered_cursor_is_not_a_server_error(second_expert, reviewer):
    import_proposed(second_expert, case_obj("one"))
    token = base64.urlsafe_b64encode(json.dumps(["yesterday", 1]).encode()).decode().rstrip("=")
    client = Client(raise_request_exception=False)
    client.force_login(reviewer)
    response = client.get(reverse("cases:queue"), {"after": token})
    assert response.status_code in (200, 400)


# -- versions and the side-by-side diff -----------------------------------------------------------


@pytest.mark.django_db
def test_the_case_page_shows_versions_and_the_diff(proposal, reviewer, lead):
    client = login(reviewer)
    client.post(
        reverse("cases:decide", args=[proposal.slug]), decide_data(proposal, "approve", overrides={2: "by hand"})
    )
    page = client.get(reverse("cases:detail", args=[proposal.slug]))
    assert Elements(page.content.decode()).find("table", id="version-diff") == []
    # Tightening only (a relaxing import would need a justification): a longer must-contain value,
    # a new expectation and a new tag.
    changed = demo_case("northline-terms")
    changed["expectations"][0] = {"kind": "must-contain", "value": "net 45", "why": "the term, with its unit"}
    changed["expectations"].append({"kind": "must-not-contain", "value": "net 60", "why": "the other customer's term"})
    changed["tags"] = ["payments", "fact", "northline"]
    result = cases_import(stream=jsonl(changed), user=lead, status=CaseStatus.ACCEPTED, update=True)
    assert result.updated == 1
    proposal.refresh_from_db()
    assert proposal.current_version == 2
    assert list(CaseVersion.objects.filter(case=proposal).values_list("number", flat=True)) == [1, 2]
    page = client.get(reverse("cases:detail", args=[proposal.slug]))
    assert page.status_code == 200
    body = page.content.decode()
    (table,) = re.findall(r'<table class="diff" id="version-diff">(.*?)</table>', body, re.S)
    assert "<th>v1</th><th>v2</th>" in table
    rows = re.findall(r'<tr class="(changed)?">(.*?)</tr>', table, re.S)
    assert len(rows) == 5 + 2  # five expectation rows (the longer side), tags, invariant
    assert rows[0][0] == "changed" and "net 45" in rows[0][1] and "the term, with its unit" in rows[0][1]
    assert [r[0] for r in rows[1:4]] == ["", "", ""]  # unchanged expectations are not marked
    assert rows[4][0] == "changed" and "net 60" in rows[4][1] and "—" in rows[4][1]  # added in v2
    assert [r[0] for r in rows[-2:]] == ["changed", ""]  # tags changed, invariant did not
    assert "northline" in rows[-2][1]
    # The versions table lists both, newest first, with who accepted each.
    versions = body.split("<h2>Versions</h2>")[1].split("</table>")[0]
    assert versions.index("<td>2</td><td>lead</td>") < versions.index("<td>1</td><td>reviewer</td>")
    # An explicit comparison, reversed.
    reverse_page = client.get(reverse("cases:detail", args=[proposal.slug]), {"a": "2", "b": "1"})
    assert "<th>v2</th><th>v1</th>" in reverse_page.content.decode()
    # Unknown versions: no diff, no error.
    missing = client.get(reverse("cases:detail", args=[proposal.slug]), {"a": "1", "b": "9"})
    assert missing.status_code == 200 and 'id="version-diff"' not in missing.content.decode()


# -- input that must never be a server error ------------------------------------------------------


# Characters str.isdigit() accepts but int() refuses ("²"), digits int() accepts but that are
# not ASCII ("٣"), and numbers no database column holds: a 4xx or ignored, never a server error.
ODD_NUMBERS = ["\u00b2", "\u0663", "9" * 20]
ODD_PLACES = ["editor threshold", "editor max steps", "row index", "decision round", "diff versions", "queue stratum"]


@pytest.mark.django_db
@pytest.mark.parametrize("where", ODD_PLACES)
@pytest.mark.parametrize("odd", ODD_NUMBERS, ids=["superscript", "arabic-indic", "huge"])
def test_odd_numbers_are_never_a_server_error(proposal, reviewer, expert, where, odd):
    client = Client(raise_request_exception=False)
    if where.startswith("editor") or where == "row index":
        client.force_login(expert)
        content = case_obj("odd", expectations=[FUZZY, {"kind": "behaviour", "value": {"maxSteps": 3}, "why": "x"}])
        data = form_data(content)
        if where == "editor threshold":
            data["exp-0-threshold"] = odd
            response = client.post(reverse("cases:propose"), data)
        elif where == "editor max steps":
            data["exp-1-maxsteps"] = odd
            response = client.post(reverse("cases:propose"), data)
        else:
            response = client.post(
                reverse("cases:editor-rows", args=["expectations"]), data | {"op": "remove", "index": odd}
            )
            assert response.status_code == 200
            assert response.content.decode().count('name="exp-row"') == 2  # nothing removed
    else:
        client.force_login(reviewer)
        if where == "decision round":
            response = client.post(
                reverse("cases:decide", args=[proposal.slug]), decide_data(proposal, "reject") | {"round": odd}
            )
            assert not Review.objects.exists()
        elif where == "diff versions":
            response = client.get(reverse("cases:detail", args=[proposal.slug]), {"a": odd, "b": "1"})
        else:
            response = client.get(reverse("cases:queue"), {"stratum": odd})
    assert response.status_code < 500
    if where.startswith("editor"):
        # Not a valid integer in range: the form comes back with the problem, nothing saved.
        assert response.status_code in (302, 400)
        if response.status_code == 400:
            assert "exp-" in response.content.decode() and "field-errors" in response.content.decode()
