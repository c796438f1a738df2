"""The ``targets`` and ``discriminate`` commands, for pipelines and scripts."""

import json

import pytest
from django.core.management import call_command

from cases.models import Case, Target
from cases.services import cases_import
from tests.conftest import demo_case, jsonl

pytestmark = pytest.mark.django_db(transaction=True)


def test_targets_add_and_list(capsys):
    call_command("targets", "add", "demo", "--demo", "--default")
    call_command(
        "targets",
        "add",
        "svc",
        "--url",
        "http://10.1.2.3:8080/answer",
        "--modes",
        "disabled",
        "--timeout",
        "5",
        "--concurrency",
        "8",
        "--allow-host",
        "10.1.2.3",
    )
    target = Target.objects.get(name="svc")
    assert (target.kind, target.sabotage_modes, target.timeout, target.concurrency) == ("http", ["disabled"], 5.0, 8)
    assert target.allowed_hosts == ["10.1.2.3"]
    capsys.readouterr()
    call_command("targets", "list")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("demo (default)\tdemo") and out[1].startswith("svc\thttp\thttp://10.1.2.3:8080/answer")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "disabled,everything"], "sabotage_modes: choose one or more of disabled, random-chunk"),
        (["--timeout", "3000"], "timeout"),
    ],
)
def test_targets_add_refuses_bad_settings(capsys, args, message):
    with pytest.raises(SystemExit) as info:
        call_command("targets", "add", "bad", "--url", "http://example.com/a", *args)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not Target.objects.filter(name="bad").exists()


def test_discriminate_wait_prints_a_line_per_case_and_exits_0(capsys, expert):
    call_command("targets", "add", "demo", "--demo")
    cases_import(stream=jsonl(demo_case("northline-terms"), demo_case("weak-greeting")), user=expert, status="proposed")
    with pytest.raises(SystemExit) as info:
        call_command("discriminate", "--target", "demo", "--all-proposed", "--wait", "--inline")
    assert info.value.code == 0
    lines = {row["caseId"]: row for row in map(json.loads, capsys.readouterr().out.splitlines()[-2:])}
    assert lines["northline-terms"] == {
        "caseId": "northline-terms",
        "version": None,
        "verdict": "discriminates",
        "modes": {"disabled": {"passed": False}, "random-chunk": {"passed": False}},
        "baseline": {"passed": True},
        "error": None,
    }
    assert lines["weak-greeting"]["verdict"] == "does-not-discriminate"


def test_discriminate_exits_1_when_a_check_ends_in_error(capsys, expert):
    call_command(
        "targets",
        "add",
        "down",
        "--url",
        "http://127.0.0.1:9/answer",
        "--allow-host",
        "127.0.0.1",
        "--retries",
        "0",
        "--timeout",
        "1",
    )
    cases_import(stream=jsonl(demo_case("northline-terms")), user=expert, status="proposed")
    with pytest.raises(SystemExit) as info:
        call_command("discriminate", "--target", "down", "--case", "northline-terms", "--wait", "--inline")
    assert info.value.code == 1
    row = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert row["verdict"] == "error" and "connection failed" in row["error"]
    assert row["modes"]["disabled"]["passed"] is None


def test_discriminate_checks_an_accepted_case_as_its_version(capsys, lead):
    call_command("targets", "add", "demo", "--demo")
    cases_import(stream=jsonl(demo_case("northline-terms")), user=lead, status="accepted")
    with pytest.raises(SystemExit):
        call_command("discriminate", "--target", "demo", "--case", "northline-terms", "--wait", "--inline")
    row = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (row["version"], row["verdict"]) == (1, "discriminates")
    assert Case.objects.get(slug="northline-terms").check_runs.get().version.number == 1


def test_discriminate_unknown_target_or_case_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        call_command("discriminate", "--target", "nope", "--all-proposed")
    assert info.value.code == 2 and "no target named 'nope'" in capsys.readouterr().err
    call_command("targets", "add", "demo", "--demo")
    with pytest.raises(SystemExit) as info:
        call_command("discriminate", "--target", "demo", "--case", "ghost")
    assert info.value.code == 2 and "no case with id 'ghost'" in capsys.readouterr().err
