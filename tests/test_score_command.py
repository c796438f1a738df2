"""``manage.py score`` as a script would run it: its own process, and no database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import case_obj

ROOT = Path(__file__).resolve().parent.parent


def run_score(tmp_path: Path, cases: str, responses: str) -> subprocess.CompletedProcess:
    cases_path = tmp_path / "cases.jsonl"
    responses_path = tmp_path / "responses.jsonl"
    cases_path.write_text(cases, encoding="utf-8")
    responses_path.write_text(responses, encoding="utf-8")
    # A database URL that cannot work proves the command never touches a database.
    env = {**os.environ, "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nothing", "REDIS_URL": "redis://127.0.0.1:1/0"}
    return subprocess.run(
        [sys.executable, "manage.py", "score", "--cases", str(cases_path), "--responses", str(responses_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def lines(*objs) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


NORTHLINE = case_obj("northline-terms")
INVARIANT = case_obj(
    "no-other-terms",
    invariant=True,
    expectations=[{"kind": "must-not-contain", "value": "net 60", "why": "another customer's terms"}],
)
GOOD = {"answer": "Northline is on net 45 terms.", "citations": ["supply-agreement-northline-2026"]}
WRONG = {"answer": "Net 30, per the 2024 agreement.", "citations": ["supply-agreement-northline-2024"]}


def test_scores_each_response_line_in_order(tmp_path):
    out = run_score(
        tmp_path,
        lines(NORTHLINE, INVARIANT),
        lines(
            {"caseId": "northline-terms", "response": WRONG},
            {"caseId": "no-other-terms", "response": GOOD},
            {"caseId": "northline-terms", "response": GOOD},
        )
        + "\n",
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["caseId"], r["passed"], r["invariant"]) for r in rows] == [
        ("northline-terms", False, False),
        ("no-other-terms", True, True),
        ("northline-terms", True, False),
    ]
    assert list(rows[0]) == ["caseId", "passed", "invariant", "results"]
    assert [(r["kind"], r["passed"]) for r in rows[0]["results"]] == [
        ("must-contain", False),
        ("must-not-contain", False),
        ("must-cite", False),
        ("behaviour", True),
    ]
    assert all(r["detail"] for r in rows[0]["results"])
    assert '"30"' in rows[0]["results"][1]["detail"]


def test_cases_without_why_still_score(tmp_path):
    draft = case_obj("d")
    del draft["expectations"][0]["why"]
    out = run_score(tmp_path, lines(draft), lines({"caseId": "d", "response": GOOD}))
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    ("cases", "responses", "expected"),
    [
        (
            lines(NORTHLINE),
            lines({"caseId": "missing", "response": GOOD}),
            "responses.jsonl: line 1: caseId: 'missing' is not a case in",
        ),
        (
            lines(NORTHLINE),
            lines({"caseId": "northline-terms", "response": {"answer": 45}}),
            "responses.jsonl: line 1: response.answer: must be a string, not integer",
        ),
        (lines(NORTHLINE), lines({"caseId": "northline-terms"}), "responses.jsonl: line 1: response: is required"),
        (
            lines(NORTHLINE),
            lines({"caseId": "northline-terms", "response": {"answer": "a", "toolCalls": [{}]}}),
            "responses.jsonl: line 1: response.toolCalls[0].name: is required",
        ),
        (
            lines(NORTHLINE),
            lines({"caseId": "northline-terms", "response": GOOD}) + "{not json\n",
            "responses.jsonl: line 2: not valid JSON",
        ),
        (
            lines(NORTHLINE, case_obj("x", expectations=[{"kind": "must-include", "value": "a"}])),
            lines({"caseId": "northline-terms", "response": GOOD}),
            "cases.jsonl: line 2: expectations[0].kind: 'must-include' is not one of",
        ),
        (
            lines(NORTHLINE, NORTHLINE),
            lines({"caseId": "northline-terms", "response": GOOD}),
            "cases.jsonl: line 2: id: 'northline-terms' appears again (first on line 1)",
        ),
        (
            lines(case_obj("f", expectations=[{"kind": "must-contain", "value": "x" * 300, "match": "fuzzy"}])),
            lines({"caseId": "f", "response": GOOD}),
            "cases.jsonl: line 1: expectations[0].value: is 300 characters",
        ),
    ],
)
def test_bad_input_exits_2_naming_file_line_and_key_with_nothing_on_stdout(tmp_path, cases, responses, expected):
    out = run_score(tmp_path, cases, responses)
    assert out.returncode == 2
    assert out.stdout == ""
    assert expected in out.stderr


def test_every_error_of_both_files_is_reported(tmp_path):
    out = run_score(
        tmp_path,
        lines(NORTHLINE, {"id": "Bad"}),
        lines({"caseId": "northline-terms", "response": {"answer": 1}}, {"response": GOOD}),
    )
    assert out.returncode == 2 and out.stdout == ""
    errors = out.stderr.splitlines()
    assert any("cases.jsonl: line 2: id:" in e for e in errors)
    assert any("cases.jsonl: line 2: question: is required" in e for e in errors)
    assert any("responses.jsonl: line 1: response.answer" in e for e in errors)
    assert any("responses.jsonl: line 2: caseId: is required" in e for e in errors)


def test_a_missing_file_is_bad_input(tmp_path):
    env = {**os.environ, "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nothing"}
    out = subprocess.run(
        [sys.executable, "manage.py", "score", "--cases", str(tmp_path / "nope.jsonl"), "--responses", "x.jsonl"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert "nope.jsonl: cannot read the file" in out.stderr
