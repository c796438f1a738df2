"""Propose and review in a real headless Chromium (Debian's, driven by Playwright),
against the app served by a live server, with a real Celery worker running the check.

Screenshots of the main pages are saved under ``test-artifacts/``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cases.models import Case, CaseStatus, CaseVersion, Stratum, Target, TargetKind

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM} (.ci/run installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread; the ORM calls the test
    # makes between browser steps are still plain synchronous code.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-dev-shm-usage",
            ],
        )
        yield browser
        browser.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def site(live_server, expert, reviewer):
    Stratum.objects.create(name="Payments: facts", tags=["payments", "fact"])
    Target.objects.create(name="demo", kind=TargetKind.DEMO, is_default=True, timeout=10)
    return live_server.url


def sign_in(browser, base: str, username: str):
    context = browser.new_context(viewport={"width": 1360, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems: list[str] = []
    # A refused form comes back as 400 on purpose (the form re-rendered with its problems).
    page.on(
        "console",
        lambda m: problems.append(m.text) if m.type == "error" and "status of 400" not in m.text else None,
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"pw-{username}")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    page.problems = problems
    return page


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def add_expectation(page, kind: str, index: int) -> None:
    page.select_option("select[name=kind]", kind)
    page.click("button[value=add-exp]")
    page.wait_for_selector(f"fieldset.expectation[data-index='{index}']")


def fill_proposal(page, case_id: str, *, with_whys: bool = True) -> None:
    page.fill("input[name=id]", case_id)
    page.fill("textarea[name=question]", "What are Northline's payment terms?")
    page.fill("input[name=tags]", "payments, fact")
    page.wait_for_selector("#strata :text('Payments: facts')")
    page.fill("input[name=exp-0-value]", "45")
    add_expectation(page, "must-not-contain", 1)
    page.fill("input[name=exp-1-value]", "30")
    add_expectation(page, "must-cite", 2)
    page.fill("input[name=exp-2-document]", "supply-agreement-northline-2026")
    add_expectation(page, "behaviour", 3)
    page.fill("input[name=exp-3-never]", "apply_credit")
    if with_whys:
        for i, why in enumerate(
            ["the term itself", "the superseded 2024 term", "provenance", "agents cannot grant credit"]
        ):
            page.fill(f"input[name=exp-{i}-why]", why)
    page.fill("textarea[name=phr-0-answer]", "Northline pays on net 45 terms under its 2026 supply agreement.")
    page.fill("input[name=phr-0-citations]", "supply-agreement-northline-2026")
    page.fill("textarea[name=phr-1-answer]", "Invoices are due 45 days after the invoice date.")
    page.fill("input[name=phr-1-citations]", "supply-agreement-northline-2026")
    page.fill("textarea[name=wrong-0-answer]", "Northline is on net 30 terms.")
    page.fill("input[name=wrong-0-citations]", "supply-agreement-northline-2024")


def test_expert_proposes_and_reviewer_approves_after_the_check(browser, site, celery_worker, expert):
    # The proposer also reviews other people's cases, which must not let them review this one.
    from django.contrib.auth.models import Group

    expert.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    expert = sign_in(browser, site, "expert")
    expert.goto(f"{site}/cases/new/")
    fill_proposal(expert, "browser-northline")
    # Live scoring shows both phrasings passing and the wrong answer failing.
    expert.wait_for_selector("#scores :text('Phrasing 2')")
    expert.wait_for_function("() => !document.querySelector('#scores').textContent.includes('should')")
    shot(expert, "editor")
    expert.click("button[value=submit]")
    expert.wait_for_url(f"{site}/cases/browser-northline/")
    assert Case.objects.get(slug="browser-northline").status == CaseStatus.PROPOSED

    # The proposer has no approve button on their own case.
    expert.goto(f"{site}/review/browser-northline/")
    assert expert.locator("#approve").count() == 0
    assert expert.locator("#own-case").is_visible()

    reviewer = sign_in(browser, site, "reviewer")
    reviewer.goto(f"{site}/review/")
    shot(reviewer, "queue")
    reviewer.click("text=browser-northline")
    reviewer.wait_for_selector("#check-panel .verdict-discriminates", timeout=60_000)
    shot(reviewer, "review")
    for i in range(4):
        reviewer.check(f"input[name=required-{i}]")
    reviewer.check("input[name=item-4][value=pass]")
    reviewer.fill("textarea[name=comment]", "Every expectation is needed; the check fails without retrieval.")
    reviewer.click("#approve")
    reviewer.wait_for_url(f"{site}/cases/browser-northline/")
    assert reviewer.locator(".status-accepted").first.is_visible()
    shot(reviewer, "case")

    case = Case.objects.get(slug="browser-northline")
    assert (case.status, case.current_version) == (CaseStatus.ACCEPTED, 1)
    version = CaseVersion.objects.get(case=case)
    assert version.number == 1 and version.review.reviewer.username == "reviewer"
    assert not expert.problems and not reviewer.problems


def test_a_missing_why_blocks_submission_with_a_visible_message(browser, site):
    expert = sign_in(browser, site, "expert")
    expert.goto(f"{site}/cases/new/")
    fill_proposal(expert, "no-why", with_whys=False)
    expert.click("button[value=submit]")
    problems = expert.locator("#submit-problems")
    problems.wait_for()
    assert "expectations[0].why" in problems.inner_text()
    assert "say what this assertion protects" in expert.locator("fieldset.expectation").first.inner_text()
    shot(expert, "submit-refused")
    assert Case.objects.get(slug="no-why").status == CaseStatus.DRAFT


def test_a_relaxed_revision_needs_a_justification_and_reaches_the_lead_audit(browser, site, celery_worker, lead):
    import io
    import json

    from cases.services import cases_import
    from tests.conftest import demo_case

    case = demo_case("northline-terms") | {"id": "relax-me"}
    cases_import(stream=io.BytesIO(json.dumps(case).encode()), user=lead, status="accepted")

    expert = sign_in(browser, site, "expert")
    expert.goto(f"{site}/cases/relax-me/")
    expert.click("#propose-revision")
    expert.wait_for_url(f"{site}/cases/relax-me/edit/")
    # Drop the must-not-contain "30": a relaxation.
    expert.locator("fieldset.expectation[data-index='1'] button.remove").click()
    expert.wait_for_function("() => document.querySelectorAll('fieldset.expectation').length === 3")
    expert.click("button[value=save]")
    box = expert.locator("textarea[name='justify-expectation-removed:expectations[1]']")
    box.wait_for()
    assert "needs a justification" in expert.locator("#revision-changes").inner_text()
    assert "superseded" in expert.locator("#revision-changes").inner_text()  # the original why is shown beside it
    shot(expert, "revision-justify")
    box.fill("The 2024 agreement is no longer retrievable, so net 30 cannot appear.")
    expert.click("button[value=save]")
    expert.wait_for_selector("text=Draft saved.")
    expert.click("button[value=submit]")
    expert.wait_for_url(f"{site}/cases/relax-me/")

    reviewer = sign_in(browser, site, "reviewer")
    reviewer.goto(f"{site}/review/relax-me/")
    assert "no longer retrievable" in reviewer.locator("#revision-changes").inner_text()
    reviewer.wait_for_selector("#check-panel .verdict", timeout=60_000)
    for i in range(3):
        reviewer.check(f"input[name=required-{i}]")
    reviewer.check("input[name=item-4][value=pass]")
    if reviewer.locator("textarea[name=override-2]").count():
        reviewer.locator("details.override summary").first.click()
        reviewer.fill("textarea[name=override-2]", "checked by hand")
    reviewer.fill("textarea[name=comment]", "The relaxation is justified.")
    reviewer.click("#approve")
    reviewer.wait_for_url(f"{site}/cases/relax-me/")
    assert Case.objects.get(slug="relax-me").current_version == 2

    auditor = sign_in(browser, site, "lead")
    auditor.goto(f"{site}/audit/")
    row = auditor.locator("table.audit tr", has_text="relax-me").filter(has_text="expectation-removed")
    assert row.count() == 1
    text = row.inner_text()
    assert "no longer retrievable" in text and "superseded" in text and "reviewer" in text
    shot(auditor, "audit")
    assert not expert.problems and not reviewer.problems and not auditor.problems
