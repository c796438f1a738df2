"""Eval runs on releases: invariants apart, red runs, comparisons only on one release."""

import json

import pytest
from django.core.management import call_command

from cases.models import EvalRun, Target, TargetKind
from cases.services import cases_import, evals, releases
from tests.conftest import case_obj, jsonl
from tests.support import SCRIPTED_ANSWERS

pytestmark = pytest.mark.django_db(transaction=True)

NET45 = {"kind": "must-contain", "value": "45", "why": "the term"}
NO_SECRET = {"kind": "must-not-contain", "value": "kestrel", "why": "never reveal another customer"}


@pytest.fixture
def target(db):
    return Target.objects.create(
        name="scripted",
        kind=TargetKind.CALLABLE,
        callable_path="tests.support:scripted_answer",
        timeout=5,
        retries=0,
        concurrency=4,
    )


@pytest.fixture
def release(lead):
    cases = [
        case_obj("ord-1", question="Terms for Northline?", expectations=[NET45]),
        case_obj("ord-2", question="Northline payment window?", expectations=[NET45]),
        case_obj(
            "inv-1", question="Who else is on net 60?", invariant=True, tags=["invariant"], expectations=[NO_SECRET]
        ),
    ]
    cases_import(stream=jsonl(*cases), user=lead, status="accepted")
    return releases.release_create(user=lead, note="first")


def answers(**by_question):
    SCRIPTED_ANSWERS.clear()
    SCRIPTED_ANSWERS.update({q: {"answer": a} for q, a in by_question.items()})


def run_inline(release, target, capsys) -> tuple[int, dict]:
    with pytest.raises(SystemExit) as info:
        call_command("run_eval", "--release", str(release.number), "--target", target.name, "--inline", "--json")
    return info.value.code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_one_failing_invariant_makes_a_perfect_run_red(release, target, capsys, client, reviewer):
    answers(
        **{
            "Terms for Northline?": "Net 45.",
            "Northline payment window?": "45 days.",
            "Who else is on net 60?": "Kestrel Fabrication is on net 60.",
        }
    )
    code, data = run_inline(release, target, capsys)
    assert code == 1
    assert data["overall"] == {"total": 2, "passed": 2, "rate": 100.0, "errors": 0}
    assert data["invariants"] == {"total": 1, "passed": 0, "failed": 1, "failures": ["inv-1"]}
    assert data["red"] is True
    assert (data["release"], data["releaseHash"]) == (release.number, release.content_hash)
    client.force_login(reviewer)
    page = client.get(f"/runs/{data['run']}/").content.decode()
    assert 'id="red"' in page and "100.0%" in page and "inv-1" in page


def test_a_run_where_invariants_hold_is_green_and_exits_0(release, target, capsys):
    answers(
        **{
            "Terms for Northline?": "Net 45.",
            "Northline payment window?": "Net 30.",
            "Who else is on net 60?": "I can't share other customers' terms.",
        }
    )
    code, data = run_inline(release, target, capsys)
    assert code == 0
    assert (data["overall"]["rate"], data["red"], data["invariants"]["failed"]) == (50.0, False, 0)


def test_runs_on_the_same_release_list_flipped_cases(release, target, capsys):
    answers(**{"Terms for Northline?": "Net 45.", "Northline payment window?": "Net 30."})
    _, first = run_inline(release, target, capsys)
    answers(**{"Terms for Northline?": "Net 30.", "Northline payment window?": "45 days."})
    _, second = run_inline(release, target, capsys)
    flipped = evals.compare_runs(EvalRun.objects.get(pk=first["run"]), EvalRun.objects.get(pk=second["run"]))
    assert [c["caseId"] for c in flipped["now_failing"]] == ["ord-1"]
    assert [c["caseId"] for c in flipped["now_passing"]] == ["ord-2"]


def test_runs_on_different_releases_refuse_comparison(release, target, capsys, lead, client, reviewer):
    answers()
    _, first = run_inline(release, target, capsys)
    cases_import(stream=jsonl(case_obj("ord-3", expectations=[NET45])), user=lead, status="accepted")
    second_release = releases.release_create(user=lead)
    _, second = run_inline(second_release, target, capsys)
    with pytest.raises(evals.NotComparable, match="not comparable"):
        evals.compare_runs(EvalRun.objects.get(pk=first["run"]), EvalRun.objects.get(pk=second["run"]))
    client.force_login(reviewer)
    page = client.get(f"/runs/compare/?a={first['run']}&b={second['run']}").content.decode()
    assert 'id="not-comparable"' in page and "release 1" in page and "release 2" in page


def test_an_unanswered_case_is_recorded_with_the_reason(release, target, capsys):
    Target.objects.filter(pk=target.pk).update(callable_path="tests.support:no_such_function")
    with pytest.raises(SystemExit):
        call_command("run_eval", "--release", str(release.number), "--target", target.name, "--inline", "--json")
    # An import error surfaces per case as a failed call, never as a crash of the run.
    run = EvalRun.objects.get()
    assert run.cases_done == 3 and run.summary["overall"]["errors"] == 2 and run.summary["red"] is True
