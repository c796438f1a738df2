"""The discrimination check end to end: real Celery worker, Redis, PostgreSQL, and a
real local HTTP server standing in for the system under test."""

from __future__ import annotations

import time

import pytest

from cases.demo.retrieval import answer as demo_answer
from cases.models import Case, CheckAttempt, CheckRun, CheckState, Target, TargetKind, Verdict
from cases.services import cases_import, checks
from tests.conftest import case_obj, demo_case, jsonl
from tests.support import wait_for

LOCAL = ["127.0.0.1"]


def make_target(name: str, kind: str = TargetKind.DEMO, **fields) -> Target:
    defaults = {"timeout": 2.0, "retries": 3, "concurrency": 4, "allowed_hosts": LOCAL}
    return Target.objects.create(name=name, kind=kind, **(defaults | fields))


def import_case(user, obj: dict) -> Case:
    cases_import(stream=jsonl(obj), user=user, status="proposed")
    return Case.objects.get(slug=obj["id"])


def wait_finished(run: CheckRun, timeout: float = 60) -> CheckRun:
    wait_for(lambda: CheckRun.objects.get(pk=run.pk).finished, timeout, what=f"check {run.pk} to finish")
    return CheckRun.objects.get(pk=run.pk)


def demo_over_http(payload: dict) -> dict:
    return demo_answer(payload["question"], payload["retrieval"], payload["seed"])


# -- verdict rules (pure) -------------------------------------------------------------

P, F, E = {"passed": True}, {"passed": False}, {"error": "HTTP 500"}
MODES = ["normal", "disabled", "random-chunk"]


@pytest.mark.parametrize(
    ("kind", "outcomes", "verdict"),
    [
        ("discrimination", [P, F, F], "discriminates"),
        ("discrimination", [F, F, F], "discriminates"),  # baseline failing is a warning, not a verdict
        ("discrimination", [P, P, F], "does-not-discriminate"),
        ("discrimination", [P, F, P], "does-not-discriminate"),
        ("discrimination", [P, E, F], "error"),
        ("discrimination", [P, E, P], "does-not-discriminate"),
        ("discrimination", [E, F, F], "discriminates"),
        ("invariant", [P, P, P], "holds"),
        ("invariant", [P, F, P], "violated"),
        ("invariant", [E, P, P], "error"),
        ("invariant", [E, F, P], "violated"),
    ],
)
def test_verdict_rules(kind, outcomes, verdict):
    assert checks.verdict_for(kind, MODES, dict(zip(MODES, outcomes, strict=True)))[0] == verdict


# -- through the worker -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
class TestOnTheDemoTarget:
    def test_a_case_that_discriminates_and_one_that_does_not(self, celery_worker, expert, reviewer):
        target = make_target("demo", is_default=True)
        good = import_case(expert, demo_case("northline-terms"))
        weak = import_case(expert, demo_case("weak-greeting"))
        good_run = wait_finished(checks.check_request(case=good, user=reviewer))
        weak_run = wait_finished(checks.check_request(case=weak, user=reviewer))
        assert (good_run.state, good_run.verdict) == (CheckState.DONE, Verdict.DISCRIMINATES)
        assert good_run.results["normal"]["passed"] is True
        assert good_run.results["disabled"]["passed"] is False
        assert good_run.results["random-chunk"]["passed"] is False
        assert not good_run.baseline_failed
        assert weak_run.verdict == Verdict.DOES_NOT_DISCRIMINATE
        assert weak_run.results["disabled"]["passed"] is True
        assert good_run.target == target and good_run.calls_done == 3
        # Every call is on record with what the system said.
        attempts = CheckAttempt.objects.filter(run=good_run)
        assert sorted(a.mode for a in attempts) == ["disabled", "normal", "random-chunk"]
        assert all(a.status == 200 and a.body for a in attempts)

    def test_invariant_case_gets_the_holds_check(self, celery_worker, expert):
        make_target("demo", is_default=True)
        case = import_case(expert, demo_case("inv-other-customer-terms"))
        run = wait_finished(checks.check_request(case=case))
        assert (run.kind, run.verdict) == ("invariant", Verdict.HOLDS)

    def test_an_invariant_that_breaks_under_sabotage_is_violated(self, celery_worker, expert):
        make_target("demo", is_default=True)
        obj = case_obj(
            "inv-cites",
            invariant=True,
            expectations=[
                {"kind": "must-cite", "documentId": "supply-agreement-northline-2026", "why": "always cite the source"}
            ],
        )
        run = wait_finished(checks.check_request(case=import_case(expert, obj)))
        assert run.verdict == Verdict.VIOLATED


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
class TestOnAnHttpTarget:
    def test_verdicts_match_the_demo_over_the_protocol(self, celery_worker, scripted_target, expert):
        scripted_target.answer = demo_over_http
        target = make_target("http-demo", TargetKind.HTTP, url=scripted_target.url("/ok"), is_default=True)
        good = wait_finished(checks.check_request(case=import_case(expert, demo_case("northline-terms"))))
        weak = wait_finished(checks.check_request(case=import_case(expert, demo_case("weak-greeting"))))
        assert good.verdict == Verdict.DISCRIMINATES
        assert weak.verdict == Verdict.DOES_NOT_DISCRIMINATE
        sent = [r for r in scripted_target.requests if r["payload"]["caseId"] == "northline-terms"]
        assert sorted(r["payload"]["retrieval"] for r in sent) == ["disabled", "normal", "random-chunk"]
        assert {r["key"] for r in sent} == {f"{good.pk}/normal", f"{good.pk}/disabled", f"{good.pk}/random-chunk"}
        assert all(r["headers"]["Content-Type"] == "application/json" for r in sent)
        assert len({r["payload"]["seed"] for r in sent}) == 1
        assert target.check_runs.count() == 2

    def test_503_503_200_takes_three_attempts_and_succeeds(self, celery_worker, scripted_target, expert):
        scripted_target.answer = demo_over_http
        make_target("flaky", TargetKind.HTTP, url=scripted_target.url("/seq/503,503,200"), is_default=True)
        run = wait_finished(checks.check_request(case=import_case(expert, demo_case("northline-terms"))))
        assert run.verdict == Verdict.DISCRIMINATES
        for mode in run.modes:
            statuses = list(CheckAttempt.objects.filter(run=run, mode=mode).values_list("status", flat=True))
            assert statuses == [503, 503, 200]

    @pytest.mark.parametrize(
        ("path", "reason", "attempts"),
        [
            ("/seq/400", "HTTP 400", 1),
            ("/notjson", "not JSON", 1),
            ("/answer-not-string", "response.answer: must be a string", 1),
            ("/big", "over the cap", 1),
            ("/array", "not an object", 1),
            ("/redirect", "redirect to 'http://10.0.0.1/steal' not followed", 1),
        ],
    )
    def test_bad_answers_end_in_error_with_the_reason(
        self, celery_worker, scripted_target, expert, path, reason, attempts
    ):
        scripted_target.handlers.update(
            {
                "/notjson": lambda p, n: (200, b"<html>oops</html>", {"Content-Type": "text/html"}),
                "/answer-not-string": lambda p, n: (200, b'{"answer": 45}', {"Content-Type": "application/json"}),
                "/big": lambda p, n: (200, b'{"answer": "' + b"x" * 5000 + b'"}', {"Content-Type": "application/json"}),
                "/array": lambda p, n: (200, b"[1, 2]", {"Content-Type": "application/json"}),
                "/redirect": lambda p, n: (307, b"", {"Location": "http://10.0.0.1/steal"}),
            }
        )
        make_target("bad", TargetKind.HTTP, url=scripted_target.url(path), max_response_bytes=4096, is_default=True)
        run = wait_finished(checks.check_request(case=import_case(expert, demo_case("northline-terms"))))
        assert (run.state, run.verdict) == (CheckState.ERROR, Verdict.ERROR)
        assert reason in run.error
        for mode in ("disabled", "random-chunk"):
            assert reason in run.results[mode]["error"]
            assert CheckAttempt.objects.filter(run=run, mode=mode).count() == attempts

    def test_a_hanging_target_ends_in_error_within_the_time_budget(self, celery_worker, scripted_target, expert):
        scripted_target.handlers["/hang"] = lambda p, n: (time.sleep(6), (200, b"{}", {}))[1]
        target = make_target(
            "hangs", TargetKind.HTTP, url=scripted_target.url("/hang"), timeout=1.0, retries=1, is_default=True
        )
        started = time.monotonic()
        run = wait_finished(checks.check_request(case=import_case(expert, demo_case("northline-terms"))))
        elapsed = time.monotonic() - started
        assert run.verdict == Verdict.ERROR
        assert "no complete answer within 1 s" in run.error
        budget = checks.batch_budget(target, 3)
        assert elapsed < budget.soft_limit
        assert CheckAttempt.objects.filter(run=run, mode="disabled").count() == 2

    def test_a_private_target_not_on_the_allowlist_is_refused_without_a_call(
        self, celery_worker, scripted_target, expert
    ):
        make_target("sneaky", TargetKind.HTTP, url=scripted_target.url("/ok"), allowed_hosts=[], is_default=True)
        run = wait_finished(checks.check_request(case=import_case(expert, demo_case("northline-terms"))))
        assert run.verdict == Verdict.ERROR
        assert "not on the target allowlist" in run.error
        assert scripted_target.requests == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_worker_killed_mid_check_is_replaced_and_the_check_recorded_once(scripted_target, expert, settings):
    from tests.support import WorkerProcess

    # Its own queue, so only the workers this test starts and kills see the check.
    settings.CHECK_QUEUE = "kill-test"
    scripted_target.answer = demo_over_http
    scripted_target.handlers["/slow"] = lambda p, n: (
        time.sleep(3 if n == 1 else 0),
        (200, __import__("json").dumps(demo_over_http(p)).encode(), {"Content-Type": "application/json"}),
    )[1]
    make_target("slow", TargetKind.HTTP, url=scripted_target.url("/slow"), timeout=5.0, retries=0, is_default=True)
    db_name = settings.DATABASES["default"]["NAME"]
    first = WorkerProcess(db_name, concurrency=1, queue="kill-test")
    try:
        run = checks.check_request(case=import_case(expert, demo_case("northline-terms")))
        wait_for(lambda: CheckRun.objects.get(pk=run.pk).state == CheckState.RUNNING, 30, what="the claim")
        wait_for(lambda: len(scripted_target.requests) >= 3, 30, what="the calls to start")
        first.kill()
    finally:
        first.stop()
    assert CheckRun.objects.get(pk=run.pk).state == CheckState.RUNNING
    second = WorkerProcess(db_name, concurrency=1, queue="kill-test")
    try:
        # The sweep hands the run on once the dead worker's lease runs out.
        def swept_and_done() -> bool:
            checks.checks_sweep()
            return CheckRun.objects.get(pk=run.pk).finished

        wait_for(swept_and_done, 120, interval=1, what="the check to complete on the new worker")
    finally:
        second.stop()
    run = CheckRun.objects.get(pk=run.pk)
    assert (run.state, run.verdict, run.deliveries) == (CheckState.DONE, Verdict.DISCRIMINATES, 2)
    # Recorded once: one set of attempts, all from the delivery that finished it.
    attempts = CheckAttempt.objects.filter(run=run)
    assert sorted(attempts.values_list("mode", flat=True)) == ["disabled", "normal", "random-chunk"]
    assert set(attempts.values_list("delivery", flat=True)) == {2}
    assert CheckRun.objects.filter(case=run.case).count() == 1


@pytest.mark.django_db(transaction=True)
class TestRequests:
    """Requests and claims in this process; nothing is sent to the workers."""

    @pytest.fixture(autouse=True)
    def no_enqueue(self, monkeypatch):
        sent: list[list[int]] = []
        monkeypatch.setattr(checks, "enqueue", lambda ids, target: sent.append(list(ids)))
        return sent

    def test_same_content_and_target_are_checked_once_unless_rerun(self, expert, reviewer):
        make_target("demo", is_default=True)
        case = import_case(expert, demo_case("northline-terms"))
        first = checks.check_request(case=case)
        assert checks.check_request(case=case) == first
        rerun = checks.check_request(case=case, user=reviewer, rerun=True)
        assert rerun != first and rerun.rerun_of == first
        assert CheckRun.objects.filter(case=case).count() == 2

    def test_only_reviewers_rerun(self, expert):
        make_target("demo", is_default=True)
        case = import_case(expert, demo_case("northline-terms"))
        with pytest.raises(checks.PermissionDenied):
            checks.check_request(case=case, user=expert, rerun=True)

    def test_editing_the_proposal_makes_the_old_verdict_stale(self, expert):
        make_target("demo", is_default=True)
        case = import_case(expert, demo_case("northline-terms"))
        run = checks.check_request(case=case)
        assert not checks.is_stale(run, case)
        changed = demo_case("northline-terms") | {"tags": ["payments", "fact", "northline"]}
        cases_import(stream=jsonl(changed), user=expert, status="proposed", update=True)
        case.refresh_from_db()
        assert checks.is_stale(run, case)
        assert checks.check_request(case=case) != run

    def test_a_second_delivery_does_nothing(self, expert):
        make_target("demo", is_default=True)
        run = checks.check_request(case=import_case(expert, demo_case("northline-terms")))
        assert checks.checks_execute([run.pk]) == 1
        assert checks.checks_execute([run.pk]) == 0
        run.refresh_from_db()
        assert run.deliveries == 1 and run.verdict == Verdict.DISCRIMINATES
        assert CheckAttempt.objects.filter(run=run).count() == 3

    def test_the_sweep_gives_up_after_bounded_deliveries(self, expert):
        from django.utils import timezone

        make_target("demo", is_default=True)
        run = checks.check_request(case=import_case(expert, demo_case("northline-terms")))
        CheckRun.objects.filter(pk=run.pk).update(
            state=CheckState.RUNNING, deliveries=checks.MAX_DELIVERIES, lease_expires_at=timezone.now()
        )
        assert checks.checks_sweep()["gave_up"] == 1
        run.refresh_from_db()
        assert run.verdict == Verdict.ERROR and "gave up after 3 deliveries" in run.error

    def test_a_lead_checks_every_proposed_case_at_once(self, expert, lead, reviewer):
        make_target("demo", is_default=True)
        for cid in ("northline-terms", "weak-greeting"):
            import_case(expert, demo_case(cid))
        with pytest.raises(checks.PermissionDenied):
            checks.checks_request_all_proposed(user=reviewer)
        runs = checks.checks_request_all_proposed(user=lead)
        assert sorted(r.case.slug for r in runs) == ["northline-terms", "weak-greeting"]
        assert checks.checks_execute([r.pk for r in runs]) == 2
