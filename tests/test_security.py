"""Security properties of every page: CSP, CSRF, escaping of user text, permissions on the
htmx endpoints, and input validation of the demo target endpoint."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.urls import reverse

from cases import roles
from cases.models import AuditAction, AuditEvent, Case, CaseStatus, Review, Stratum, Target
from cases.services import checks
from cases.services.lifecycle import case_create
from cases.services.review import review_decide
from tests.conftest import case_obj, demo_case, jsonl, make_user
from tests.test_review_flow import (
    assert_login_redirect,
    decide_data,
    form_data,
    login,
    make_demo_target,
    make_stratum,
    propose,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def no_enqueue(monkeypatch):
    monkeypatch.setattr(checks, "enqueue", lambda ids, target: None)


class Page(HTMLParser):
    """Start tags with their attributes, and the text inside every <script>."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None
        self._script_text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "script":
            self._in_script, self._script_text = attrs, []

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        if self._in_script is not None:
            self._script_text.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, "".join(self._script_text)))
            self._in_script = None


def csp_directives(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"no Content-Security-Policy on {response.request['PATH_INFO']} ({response.status_code})"
    directives = {}
    for part in header.split(";"):
        bits = part.split()
        if bits:
            directives[bits[0]] = bits[1:]
    return directives


def assert_strict_csp(response) -> None:
    directives = csp_directives(response)
    assert "'self'" in directives["default-src"]
    assert "*" not in directives["default-src"]
    script_src = directives.get("script-src", directives["default-src"])
    for loose in ("'unsafe-inline'", "'unsafe-eval'", "*", "data:", "http:", "https:"):
        assert loose not in script_src, f"script-src allows {loose}"
    assert directives.get("object-src") == ["'none'"]
    assert directives.get("frame-ancestors") == ["'none'"]


def assert_no_inline_code(body: str) -> None:
    """What the CSP would block anyway must not be needed by our own pages."""
    page = Page(body)
    for attrs, text in page.scripts:
        assert attrs.get("src"), "an inline <script>"
        assert not text.strip()
    for tag, attrs in page.tags:
        assert not [a for a in attrs if a.startswith("on")], f"inline event handler on <{tag}>"
        assert "style" not in attrs, f"inline style on <{tag}>"
        for name in ("href", "src", "action", "formaction"):
            assert not (attrs.get(name) or "").strip().lower().startswith("javascript:")


# -- Content-Security-Policy on every page ---------------------------------------------------------


@pytest.fixture
def site(expert, reviewer, lead, outsider):
    stratum = make_stratum()
    make_demo_target()
    proposed = propose(expert, demo_case("northline-terms"))
    draft = case_create(user=expert, content=case_obj("a-draft"))
    return {
        "users": {"expert": expert, "reviewer": reviewer, "lead": lead, "outsider": outsider, "anonymous": None},
        "proposed": proposed,
        "draft": draft,
        "stratum": stratum,
    }


PAGES = [
    # (persona, method, url name, args, status)
    ("anonymous", "get", "login", [], 200),
    ("anonymous", "get", "cases:home", [], 302),
    ("expert", "get", "cases:home", [], 200),
    ("expert", "get", "cases:list", [], 200),
    ("expert", "get", "cases:detail", ["northline-terms"], 200),
    ("expert", "get", "cases:propose", [], 200),
    ("expert", "get", "cases:edit", ["a-draft"], 200),
    ("expert", "get", "cases:export", [], 200),
    ("expert", "post", "cases:editor-preview", ["scores"], 200),
    ("expert", "post", "cases:editor-preview", ["strata"], 200),
    ("expert", "post", "cases:editor-preview", ["similar"], 200),
    ("expert", "post", "cases:editor-rows", ["expectations"], 200),
    ("expert", "post", "cases:propose", [], 400),
    ("expert", "get", "cases:queue", [], 403),
    ("reviewer", "get", "cases:queue", [], 200),
    ("reviewer", "get", "cases:review", ["northline-terms"], 200),
    ("reviewer", "get", "cases:check-panel", ["northline-terms"], 200),
    ("reviewer", "post", "cases:decide", ["northline-terms"], 400),
    ("lead", "get", "cases:strata", [], 200),
    ("lead", "get", "cases:stratum-edit", ["STRATUM"], 200),
    ("lead", "get", "cases:targets", [], 200),
    ("lead", "get", "cases:check-all-progress", [], 200),
    ("lead", "get", "cases:import", [], 200),
    ("outsider", "get", "cases:list", [], 404),
    ("outsider", "get", "cases:home", [], 200),
    ("lead", "get", "cases:detail", ["no-such-case"], 404),
]


@pytest.mark.parametrize(("persona", "method", "name", "args", "status"), PAGES, ids=lambda v: str(v))
def test_every_page_carries_a_strict_csp(site, persona, method, name, args, status):
    args = [str(site["stratum"].pk) if a == "STRATUM" else a for a in args]
    client = login(site["users"][persona])
    url = reverse(name, args=args)
    if method == "post":
        data = form_data(demo_case("northline-terms")) | {"op": "add", "question": ""}
        if name == "cases:decide":
            data = decide_data(site["proposed"], "approve", required=False)
        response = client.post(url, data)
    else:
        response = client.get(url)
    assert response.status_code == status
    assert_strict_csp(response)
    if response["Content-Type"].startswith("text/html") and status != 302:
        assert_no_inline_code(response.content.decode())


def crawl(client: Client, start: str, depth: int = 2, limit: int = 80) -> dict[str, object]:
    """GET every same-site link (and htmx GET target) reachable from ``start``, ``depth`` levels deep."""
    seen: dict[str, object] = {}
    frontier = [start]
    for _ in range(depth):
        found: list[str] = []
        for url in frontier:
            if url in seen or len(seen) >= limit:
                continue
            response = client.get(url)
            seen[url] = response
            if response.streaming or not response["Content-Type"].startswith("text/html"):
                continue
            for _tag, attrs in Page(response.content.decode()).tags:
                for name in ("href", "hx-get"):
                    link = attrs.get(name) or ""
                    if link.startswith("/") and not link.startswith(("//", "/static/", "/admin/")):
                        found.append(link)
        frontier = found
    return seen


@pytest.mark.parametrize("persona", ["lead", "expert", "reviewer"])
def test_every_linked_page_carries_a_strict_csp(site, persona):
    """New pages are covered too: whatever the navigation links to."""
    client = Client(raise_request_exception=False)  # an error page must carry the policy too
    client.force_login(site["users"][persona])
    pages = crawl(client, reverse("cases:home"))
    assert len(pages) >= 8, list(pages)
    for response in pages.values():
        assert_strict_csp(response)
        if not response.streaming and response["Content-Type"].startswith("text/html"):
            assert_no_inline_code(response.content.decode())


def test_an_unrouted_url_carries_the_csp_too(db):
    response = Client().get("/no/such/page/")
    assert response.status_code == 404
    assert_strict_csp(response)


def test_the_htmx_headers_carry_the_csrf_token_not_inline_script(expert):
    client = login(expert)
    body = client.get(reverse("cases:propose")).content.decode()
    (body_attrs,) = [a for t, a in Page(body).tags if t == "body"]
    headers = json.loads(body_attrs["hx-headers"])
    assert set(headers) == {"X-CSRFToken"} and len(headers["X-CSRFToken"]) >= 32
    scripts = [a["src"] for t, a in Page(body).tags if t == "script"]
    assert scripts == ["/static/vendor/htmx-2.0.8.min.js"]
    (config,) = [a["content"] for t, a in Page(body).tags if t == "meta" and a.get("name") == "htmx-config"]
    assert json.loads(config)["allowEval"] is False and json.loads(config)["allowScriptTags"] is False


# -- CSRF ------------------------------------------------------------------------------------------


def csrf_client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def csrf_token(client: Client, page: str) -> str:
    response = client.get(page)
    assert response.status_code == 200
    return client.cookies["csrftoken"].value


class TestCsrf:
    def post_twice(self, client, page, url, data, **extra):
        """Without the token, then with it. Returns both responses."""
        refused = client.post(url, data, **extra)
        token = csrf_token(client, page)
        if isinstance(data, dict) and "file" in data:
            data["file"].seek(0)
        accepted = client.post(url, {**data, "csrfmiddlewaretoken": token}, **extra)
        return refused, accepted

    def test_propose(self, expert):
        client = csrf_client(expert)
        refused = client.post(reverse("cases:propose"), form_data(case_obj("csrf-case")))
        assert refused.status_code == 403 and not Case.objects.exists()
        refused, accepted = self.post_twice(
            client, reverse("cases:propose"), reverse("cases:propose"), form_data(case_obj("csrf-case"))
        )
        assert refused.status_code == 403
        assert accepted.status_code == 302
        assert Case.objects.filter(slug="csrf-case", proposer=expert).exists()

    def test_decide(self, expert, reviewer):
        case = propose(expert, demo_case("northline-terms"))
        client = csrf_client(reviewer)
        refused, accepted = self.post_twice(
            client,
            reverse("cases:review", args=[case.slug]),
            reverse("cases:decide", args=[case.slug]),
            decide_data(case, "request-changes"),
        )
        assert refused.status_code == 403
        assert accepted.status_code == 302
        assert Review.objects.filter(case=case).count() == 1

    def test_strata(self, lead):
        data = {"name": "Returns", "tags": "returns, fact", "description": "", "min_cases": "5"}
        refused, accepted = self.post_twice(csrf_client(lead), reverse("cases:strata"), reverse("cases:strata"), data)
        assert refused.status_code == 403
        assert accepted.status_code == 302
        assert list(Stratum.objects.values_list("name", flat=True)) == ["Returns"]

    def test_targets(self, lead):
        data = {
            "name": "demo-two",
            "kind": "demo",
            "sabotage_modes": ["disabled", "random-chunk"],
            "timeout": "5",
            "retries": "1",
            "concurrency": "4",
            "max_response_bytes": "1048576",
            "allowed_hosts": "",
        }
        refused, accepted = self.post_twice(csrf_client(lead), reverse("cases:targets"), reverse("cases:targets"), data)
        assert refused.status_code == 403
        assert accepted.status_code == 302, accepted.content.decode()[:2000]
        assert Target.objects.filter(name="demo-two").exists()

    def test_import(self, lead):
        upload = jsonl(case_obj("imported-one"))
        upload.name = "cases.jsonl"
        data = {"status": "draft", "file": upload}
        refused, accepted = self.post_twice(csrf_client(lead), reverse("cases:import"), reverse("cases:import"), data)
        assert refused.status_code == 403
        assert accepted.status_code == 302
        assert Case.objects.filter(slug="imported-one").exists()

    def test_htmx_posts_need_the_header_token(self, expert):
        client = csrf_client(expert)
        url = reverse("cases:editor-rows", args=["expectations"])
        data = form_data(case_obj("x")) | {"op": "add"}
        assert client.post(url, data, HTTP_HX_REQUEST="true").status_code == 403
        body = client.get(reverse("cases:propose")).content.decode()
        (body_attrs,) = [a for t, a in Page(body).tags if t == "body"]
        token = json.loads(body_attrs["hx-headers"])["X-CSRFToken"]
        ok = client.post(url, data, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token)
        assert ok.status_code == 200
        wrong = client.post(url, data, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN="x" * 64)
        assert wrong.status_code == 403


# -- escaping of everything a user typed ------------------------------------------------------------

P_SCRIPT = "<script>alert(1)</script>"
P_IMG = '"><img src=x onerror=alert(1)>'
P_HX = '<div hx-get="/admin/" hx-trigger="load">x</div>'
P_TPL = "{{ 7*7 }}"
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"


def hostile_case(case_id: str) -> dict:
    return {
        "id": case_id,
        "question": f"Northline payment terms? {P_SCRIPT} {P_IMG} {P_HX} {P_TPL}",
        "tags": [P_SCRIPT, P_IMG, P_HX, P_TPL],
        "source": {"kind": "ticket", "ref": P_IMG + P_HX},
        "context": {"expectedSources": [P_SCRIPT], "allowedTools": [P_HX]},
        "rubric": [P_SCRIPT + P_HX],
        "expectations": [
            {"kind": "must-contain", "value": P_SCRIPT, "why": P_IMG},
            {"kind": "must-not-contain", "value": P_IMG, "why": P_HX},
            {"kind": "must-cite", "documentId": P_HX, "why": P_SCRIPT},
            {"kind": "behaviour", "value": {"callsTool": [P_SCRIPT], "neverCallsTool": [P_IMG]}, "why": P_TPL},
            {"kind": "must-contain", "value": P_TPL, "match": "fuzzy", "threshold": 90, "why": P_HX + P_TPL},
        ],
        "phrasings": [
            {"answer": f"{P_SCRIPT} {P_TPL}", "citations": [P_HX], "toolCalls": [{"name": P_SCRIPT}]},
            {"answer": f"{P_IMG} {P_HX}", "citations": [P_SCRIPT]},
        ],
        "wrongAnswers": [{"answer": P_HX + P_TPL + P_IMG, "citations": [P_IMG]}],
    }


def assert_inert(body: str) -> None:
    assert "<script>alert(1)" not in body
    assert "<img src=x" not in body
    assert '"><img' not in body
    assert '<div hx-get="/admin/"' not in body
    # Every onerror=alert is inside escaped text.
    for match in re.finditer(r"onerror=alert", body):
        assert body[: match.start()].endswith("&lt;img src=x "), body[max(0, match.start() - 80) : match.end()]
    page = Page(body)
    for tag, attrs in page.tags:
        assert attrs.get("hx-get") != "/admin/", f"<{tag}> got an injected hx-get"
        assert not [a for a in attrs if a.startswith("on")], f"<{tag}> got an event handler"
        assert tag != "img"
    assert all(attrs.get("src") and not text.strip() for attrs, text in page.scripts)


@pytest.fixture
def hostile(expert, reviewer, lead):
    Stratum.objects.create(name=P_IMG, tags=[P_SCRIPT], description=P_HX)
    sent_back = propose(expert, hostile_case("hostile-one"))
    review_decide(
        case=sent_back,
        user=reviewer,
        decision="request-changes",
        comment=f"fix {P_SCRIPT} {P_IMG} {P_HX} {P_TPL}",
        round=1,
        content_hash=sent_back.content_hash,
    )
    proposed = propose(expert, hostile_case("hostile-two"))
    return {"sent_back": sent_back, "proposed": proposed}


HOSTILE_PAGES = [
    # (persona, method, url name, args, extra params, must show the escaped payload)
    ("expert", "get", "cases:detail", ["hostile-one"], {}, True),
    ("reviewer", "get", "cases:detail", ["hostile-two"], {}, True),
    ("reviewer", "get", "cases:review", ["hostile-one"], {}, True),
    ("reviewer", "get", "cases:review", ["hostile-two"], {}, True),
    ("reviewer", "get", "cases:queue", [], {}, True),
    ("reviewer", "get", "cases:queue", [], {"status": "any", "q": "<script>"}, True),
    ("lead", "get", "cases:queue", [], {"tag": P_SCRIPT}, True),
    ("expert", "get", "cases:edit", ["hostile-one"], {}, True),
    ("expert", "get", "cases:home", [], {}, True),
    ("reviewer", "get", "cases:home", [], {}, True),
    ("lead", "get", "cases:list", [], {}, True),
    ("lead", "get", "cases:strata", [], {}, True),
    ("reviewer", "get", "cases:check-panel", ["hostile-two"], {}, False),
    ("expert", "post", "cases:editor-preview", ["scores"], {}, True),
    ("expert", "post", "cases:editor-preview", ["strata"], {}, False),
    ("expert", "post", "cases:editor-preview", ["similar"], {}, False),
    ("expert", "post", "cases:editor-rows", ["expectations"], {}, True),
    ("expert", "post", "cases:editor-rows", ["phrasings"], {}, True),
    ("expert", "post", "cases:editor-rows", ["wrong"], {}, True),
    ("expert", "post", "cases:propose", [], {"id": "Hostile-Three", "exp-4-threshold": "20"}, True),
    ("expert", "post", "cases:edit", ["hostile-one"], {"exp-4-threshold": "20"}, True),
]


@pytest.mark.parametrize(("persona", "method", "name", "args", "params", "shown"), HOSTILE_PAGES, ids=lambda v: str(v))
def test_user_text_is_escaped_everywhere(hostile, expert, reviewer, lead, persona, method, name, args, params, shown):
    client = login({"expert": expert, "reviewer": reviewer, "lead": lead}[persona])
    url = reverse(name, args=args)
    if method == "post":
        response = client.post(url, form_data(hostile_case("hostile-one")) | {"op": "add"} | params)
    else:
        response = client.get(url, params)
    assert response.status_code in (200, 400)
    body = response.content.decode()
    assert_inert(body)
    if shown:
        assert "&lt;script&gt;" in body or "&lt;div hx-get=&quot;/admin/&quot;" in body
    if name in ("cases:detail", "cases:review", "cases:edit") and method == "get":
        assert P_TPL in body  # shown as typed, never evaluated
    if name == "cases:editor-preview" and args == ["strata"]:
        assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in body  # the stratum's name


def test_the_review_comment_and_a_refused_decision_are_escaped(hostile, expert, reviewer):
    page = login(expert).get(reverse("cases:detail", args=["hostile-one"])).content.decode()
    assert "fix " + ESCAPED_SCRIPT in page
    assert_inert(page)
    case = hostile["proposed"]
    data = decide_data(case, "approve", comment=P_SCRIPT + P_HX, required=False) | {
        "override-2": P_IMG,
        "override-3": P_HX,
        "override-5": P_SCRIPT,
    }
    refused = login(reviewer).post(reverse("cases:decide", args=[case.slug]), data)
    assert refused.status_code == 400
    body = refused.content.decode()
    assert_inert(body)
    assert ESCAPED_SCRIPT in body  # the comment is re-shown, escaped
    case.refresh_from_db()
    assert case.status == CaseStatus.PROPOSED


def test_the_audit_trail_shows_a_justification_escaped(hostile, reviewer, expert):
    make_stratum("Hostile", [P_SCRIPT, P_IMG])
    case = hostile["proposed"]
    response = login(reviewer).post(
        reverse("cases:decide", args=[case.slug]),
        decide_data(case, "approve", comment="ok", overrides={2: P_HX + P_SCRIPT, 3: P_IMG, 5: P_TPL}),
    )
    assert response.status_code == 302
    assert AuditEvent.objects.filter(case=case, action=AuditAction.OVERRIDE).exists()
    page = login(expert).get(reverse("cases:detail", args=[case.slug])).content.decode()
    assert_inert(page)
    assert "&lt;div hx-get=&quot;/admin/&quot;" in page


# -- permissions of the htmx endpoints --------------------------------------------------------------

HTMX_ENDPOINTS = [
    # (method, url name, args, expected for expert, reviewer, lead, outsider)
    ("post", "cases:editor-rows", ["expectations"], (200, 403, 200, 404)),
    ("post", "cases:editor-rows", ["phrasings"], (200, 403, 200, 404)),
    ("post", "cases:editor-rows", ["wrong"], (200, 403, 200, 404)),
    ("post", "cases:editor-preview", ["scores"], (200, 403, 200, 404)),
    ("post", "cases:editor-preview", ["strata"], (200, 403, 200, 404)),
    ("post", "cases:editor-preview", ["similar"], (200, 403, 200, 404)),
    ("get", "cases:check-panel", ["northline-terms"], (403, 200, 200, 404)),
    ("post", "cases:check-rerun", ["northline-terms"], (403, 302, 302, 404)),
    # 286: htmx "stop polling" (nothing left to check)
    ("get", "cases:check-all-progress", [], (403, 403, 286, 404)),
    ("post", "cases:check-all", [], (403, 403, 302, 404)),
]


@pytest.mark.parametrize(("method", "name", "args", "expected"), HTMX_ENDPOINTS, ids=lambda v: str(v))
@pytest.mark.parametrize("persona", ["expert", "reviewer", "lead", "outsider", "anonymous"])
def test_htmx_endpoints_check_permissions(expert, reviewer, lead, outsider, method, name, args, expected, persona):
    make_demo_target()
    third = make_user("expert3", roles.EXPERT)
    propose(third, demo_case("northline-terms"))
    users = {"expert": expert, "reviewer": reviewer, "lead": lead, "outsider": outsider, "anonymous": AnonymousUser()}
    client = login(users[persona])
    url = reverse(name, args=args)
    data = form_data(case_obj("x")) | {"op": "add"}
    response = getattr(client, method)(url, data if method == "post" else {}, HTTP_HX_REQUEST="true")
    if persona == "anonymous":
        assert_login_redirect(response)
        return
    status = expected[("expert", "reviewer", "lead", "outsider").index(persona)]
    assert response.status_code == status
    if status == 302:
        assert not response["Location"].startswith(reverse("login"))
    if status in (403, 404):
        assert b"northline" not in response.content.lower()


def test_the_check_panel_of_a_proposers_own_case_is_open_to_them_only_as_a_reviewer(expert, reviewer):
    case = propose(expert, demo_case("northline-terms"))
    assert login(expert).get(reverse("cases:check-panel", args=[case.slug])).status_code == 403
    assert login(reviewer).get(reverse("cases:check-panel", args=[case.slug])).status_code == 200


# -- the demo target endpoint -------------------------------------------------------------------------


def post_json(body, client=None, content_type="application/json"):
    client = client or Client()
    return client.post(reverse("cases:demo-target"), body, content_type=content_type)


class TestDemoTarget:
    @pytest.mark.parametrize(
        ("body", "message"),
        [
            (b"this is not json", "the body must be JSON"),
            (b"\xff\xfe\x00garbage", "the body must be JSON"),
            (b"", "the body must be JSON"),
            (b"[1, 2]", "the body must be a JSON object"),
            (b'"a string"', "the body must be a JSON object"),
            (json.dumps({"question": "What are Northline's terms?", "retrieval": "sabotaged"}), "retrieval:"),
            (json.dumps({"question": "What are Northline's terms?", "retrieval": None}), "retrieval:"),
            (json.dumps({"retrieval": "normal"}), "question:"),
            (json.dumps({"question": "   "}), "question:"),
            (json.dumps({"question": 45}), "question:"),
            (json.dumps({"question": "terms?", "seed": "7"}), "seed:"),
            (json.dumps({"question": "terms?", "seed": True}), "seed:"),
        ],
        ids=lambda v: str(v)[:40],
    )
    def test_bad_input_is_400_with_the_reason(self, body, message):
        response = post_json(body)
        assert response.status_code == 400
        assert response["Content-Type"] == "application/json"
        assert message in response.json()["error"]

    @pytest.mark.parametrize("retrieval", ["normal", "disabled", "random-chunk"])
    def test_a_valid_request_gets_a_response_object(self, retrieval):
        response = post_json(
            json.dumps({"question": "What are Northline's payment terms?", "retrieval": retrieval, "seed": 17})
        )
        assert response.status_code == 200
        answer = response.json()
        assert isinstance(answer, dict) and isinstance(answer["answer"], str)
        assert isinstance(answer.get("citations", []), list)

    def test_the_normal_answer_passes_the_demo_case_and_sabotage_changes_it(self):
        normal = post_json(json.dumps({"question": "What are Northline's payment terms?", "seed": 3})).json()
        disabled = post_json(
            json.dumps({"question": "What are Northline's payment terms?", "retrieval": "disabled", "seed": 3})
        ).json()
        assert "45" in normal["answer"] and normal != disabled

    def test_it_needs_no_session_and_no_csrf_token(self):
        response = post_json(json.dumps({"question": "terms?"}), client=Client(enforce_csrf_checks=True))
        assert response.status_code == 200

    def test_only_post(self):
        assert Client().get(reverse("cases:demo-target")).status_code == 405

    def test_an_oversized_body_is_413(self):
        response = post_json(json.dumps({"question": "x" * (70 * 1024)}))
        assert response.status_code == 413

    def test_switched_off_it_is_404(self, settings):
        settings.DEMO_TARGET_ENABLED = False
        assert post_json(json.dumps({"question": "terms?"})).status_code == 404

    def test_it_carries_the_csp_header(self):
        assert_strict_csp(post_json(json.dumps({"question": "terms?"})))

    def test_deeply_nested_json_is_a_400_not_a_server_error(self):
        client = Client(raise_request_exception=False)
        response = post_json("[" * 10_000 + "]" * 10_000, client=client)
        assert response.status_code == 400


# -- redirects -------------------------------------------------------------------------------------------


def test_acknowledging_does_not_redirect_off_site(expert, reviewer, lead):
    make_stratum()
    case = propose(expert, demo_case("northline-terms"))
    login(reviewer).post(
        reverse("cases:decide", args=[case.slug]), decide_data(case, "approve", overrides={2: "by hand"})
    )
    event = AuditEvent.objects.get(case=case, action=AuditAction.OVERRIDE)
    response = login(lead).post(reverse("cases:audit-ack", args=[event.pk]), {"next": "https://evil.example/"})
    assert response.status_code == 302
    assert not response["Location"].startswith(("http://", "https://", "//"))


def test_login_does_not_redirect_off_site(db, reviewer):
    response = Client().post(
        reverse("login") + "?next=https://evil.example/",
        {"username": "reviewer", "password": "pw-reviewer", "next": "https://evil.example/"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("cases:home")


def test_sessions_and_csrf_cookies(db, reviewer):
    client = Client()
    response = client.post(reverse("login"), {"username": "reviewer", "password": "pw-reviewer"})
    assert response.status_code == 302
    assert client.cookies["sessionid"]["httponly"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
