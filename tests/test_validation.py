"""Table-driven tests of cases/validation.py against spec/case-format.md and case.schema.json.

Pure Python, no database. Each row of a table is one rule of the spec: it mutates a
valid case at one key path and states the single error expected (path + key phrase).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from cases.validation import (
    FUZZY_VALUE_MAX,
    FieldError,
    convert_short_format,
    is_short_format,
    validate_behaviour,
    validate_case,
    validate_expectation,
    validate_response,
)

KINDS_TEXT = "must-contain, must-not-contain, must-cite, behaviour"
DELETE = object()  # sentinel: remove the key at the path


def valid_case() -> dict[str, Any]:
    """A minimal valid (non-draft) case; every kind of expectation, one of each."""
    return {
        "id": "northline-terms",
        "question": "What are Northline's payment terms?",
        "tags": ["payments", "fact"],
        "expectations": [
            {"kind": "must-contain", "value": "45", "why": "the term itself; any phrasing"},
            {"kind": "must-not-contain", "value": "30", "why": "the superseded 2024 term", "match": "normalized"},
            {"kind": "must-cite", "documentId": "supply-agreement-northline-2026", "why": "provenance"},
            {"kind": "behaviour", "value": {"abstains": False}, "why": "answerable"},
        ],
    }


def full_case() -> dict[str, Any]:
    """A valid case using every optional key the spec and schema allow."""
    case = valid_case()
    case["expectations"] += [
        {"kind": "must-contain", "value": "early payment discount", "match": "fuzzy", "threshold": 90, "why": "w"},
        {"kind": "must-contain", "value": "Net 45", "match": "exact", "why": "w"},
        {
            "kind": "behaviour",
            "value": {
                "abstains": True,
                "asksClarification": False,
                "callsTool": ["lookup_invoices"],
                "neverCallsTool": ["apply_credit"],
                "requiresConfirmation": True,
                "maxSteps": 3,
            },
            "why": "out of scope",
        },
    ]
    case.update(
        invariant=True,
        source={"kind": "ticket", "ref": "SUP-1234"},
        context={"expectedSources": ["supply-agreement-northline-2026"], "allowedTools": ["lookup_invoices"]},
        rubric=["mentions the 2026 agreement", "is polite"],
        phrasings=[
            {
                "answer": "Northline is on net 45 terms under the 2026 supply agreement.",
                "citations": ["supply-agreement-northline-2026"],
                "toolCalls": [{"name": "lookup_invoices", "arguments": {"customer": "northline"}}],
                "steps": 2,
                "abstained": False,
                "askedClarification": False,
                "requestedConfirmation": False,
                "retrieved": ["supply-agreement-northline-2026", "supply-agreement-northline-2024"],
            },
            {"answer": "Net 45."},
        ],
        wrongAnswers=[{"answer": "Net 30.", "citations": []}],
        version=3,
        status="accepted",
    )
    return case


_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    return [int(idx) if idx else key for key, idx in _TOKEN.findall(path)]


def patched(patch: dict[str, Any], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A deep copy of ``base`` (default: valid_case()) with each ``path: value`` applied."""
    obj = copy.deepcopy(base if base is not None else valid_case())
    for path, value in patch.items():
        *parents, last = _steps(path)
        target: Any = obj
        for step in parents:
            target = target[step]
        if value is DELETE:
            del target[last]
        elif isinstance(last, int) and last == len(target):
            target.append(value)
        else:
            target[last] = value
    return obj


def errors_of(obj: Any, *, draft: bool = False) -> list[FieldError]:
    errors = validate_case(obj, draft=draft)
    assert all(isinstance(e, FieldError) for e in errors)
    return errors


def assert_single_error(errors: list[FieldError], path: str, phrase: str) -> None:
    assert [e.path for e in errors] == [path], [str(e) for e in errors]
    assert phrase in errors[0].message, str(errors[0])
    assert str(errors[0]) == f"{path}: {errors[0].message}"


# ---------------------------------------------------------------------------
# Valid cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("builder", "draft"),
    [
        pytest.param(valid_case, False, id="minimal-valid"),
        pytest.param(valid_case, True, id="minimal-valid-as-draft"),
        pytest.param(full_case, False, id="all-optional-keys"),
        pytest.param(full_case, True, id="all-optional-keys-as-draft"),
    ],
)
def test_valid_case_has_no_errors(builder, draft):
    assert errors_of(builder(), draft=draft) == []


# Each row: patch applied to valid_case(); the case must still be valid.
VALID_ROWS = [
    ("id-100-chars", {"id": "a" * 100}),
    ("id-one-char", {"id": "a"}),
    ("id-starts-with-digit", {"id": "2026-terms"}),
    ("id-dots-underscores-dashes", {"id": "north.line_terms-v2"}),
    ("question-4000-chars", {"question": "q" * 4000}),
    ("question-one-char", {"question": "?"}),
    ("tag-64-chars", {"tags": ["t" * 64]}),
    ("match-normalized", {"expectations[0].match": "normalized"}),
    ("match-exact", {"expectations[0].match": "exact"}),
    ("match-fuzzy-no-threshold", {"expectations[0].match": "fuzzy"}),
    ("threshold-50", {"expectations[0].match": "fuzzy", "expectations[0].threshold": 50}),
    ("threshold-100", {"expectations[0].match": "fuzzy", "expectations[0].threshold": 100}),
    ("fuzzy-value-256", {"expectations[0].match": "fuzzy", "expectations[0].value": "x" * FUZZY_VALUE_MAX}),
    ("exact-value-long", {"expectations[0].match": "exact", "expectations[0].value": "x" * 5000}),
    ("normalized-value-long", {"expectations[0].match": "normalized", "expectations[0].value": "x" * 5000}),
    ("default-match-value-long", {"expectations[0].value": "x" * 5000}),
    ("must-not-contain-fuzzy", {"expectations[1].match": "fuzzy", "expectations[1].threshold": 75}),
    ("behaviour-maxSteps-0", {"expectations[3].value": {"maxSteps": 0}}),
    ("behaviour-callsTool-empty-list", {"expectations[3].value": {"callsTool": []}}),
    ("behaviour-neverCallsTool", {"expectations[3].value": {"neverCallsTool": ["a", "b"]}}),
    ("behaviour-asksClarification", {"expectations[3].value": {"asksClarification": True}}),
    ("behaviour-requiresConfirmation", {"expectations[3].value": {"requiresConfirmation": False}}),
    ("invariant-false", {"invariant": False}),
    ("source-without-ref", {"source": {"kind": "expert"}}),
    *[
        (f"source-kind-{k}", {"source": {"kind": k}})
        for k in ("trace", "ticket", "bug-report", "known-hard", "expert", "synthetic")
    ],
    ("context-empty", {"context": {}}),
    ("rubric-empty", {"rubric": []}),
    ("phrasings-empty", {"phrasings": []}),
    ("response-empty-answer", {"phrasings": [{"answer": ""}]}),
    ("response-extra-unknown-key", {"phrasings": [{"answer": "a", "confidence": 0.9, "model": "x"}]}),
    ("wrongAnswer-extra-unknown-key", {"wrongAnswers": [{"answer": "a", "latencyMs": 120}]}),
    ("response-toolCall-extra-key", {"phrasings": [{"answer": "a", "toolCalls": [{"name": "t", "id": "c1"}]}]}),
    ("response-steps-0", {"phrasings": [{"answer": "a", "steps": 0}]}),
    ("version-1", {"version": 1}),
    ("status-string", {"status": "draft"}),
]


@pytest.mark.parametrize("patch", [pytest.param(p, id=i) for i, p in VALID_ROWS])
def test_valid_variants(patch):
    assert errors_of(patched(patch)) == []


# ---------------------------------------------------------------------------
# One rule, one row: (id, patch, draft, expected path, key phrase of the message)
# ---------------------------------------------------------------------------

CASE_RULES = [
    # required keys (a draft does not relax their presence)
    ("missing-id", {"id": DELETE}, False, "id", "is required"),
    ("missing-question", {"question": DELETE}, False, "question", "is required"),
    ("missing-tags", {"tags": DELETE}, False, "tags", "is required"),
    ("missing-tags-draft", {"tags": DELETE}, True, "tags", "is required"),
    ("missing-expectations", {"expectations": DELETE}, False, "expectations", "is required"),
    ("missing-expectations-draft", {"expectations": DELETE}, True, "expectations", "is required"),
    # unknown keys at case level
    ("unknown-case-key", {"expectation": []}, False, "expectation", "unknown key"),
    ("unknown-case-key-draft", {"Tags": []}, True, "Tags", "unknown key"),
    ("short-format-key-in-full-case", {"input": "x"}, False, "input", "unknown key"),
    # id
    ("id-uppercase", {"id": "Northline"}, False, "id", "is not a valid id"),
    ("id-leading-dash", {"id": "-northline"}, False, "id", "is not a valid id"),
    ("id-leading-dot", {"id": ".northline"}, False, "id", "is not a valid id"),
    ("id-leading-underscore", {"id": "_northline"}, False, "id", "is not a valid id"),
    ("id-space", {"id": "north line"}, False, "id", "is not a valid id"),
    ("id-slash", {"id": "north/line"}, False, "id", "is not a valid id"),
    ("id-101-chars", {"id": "a" * 101}, False, "id", "at most 100 characters"),
    ("id-empty", {"id": ""}, False, "id", "is not a valid id"),
    ("id-integer", {"id": 42}, False, "id", "must be a string, not integer"),
    ("id-null", {"id": None}, False, "id", "must be a string, not null"),
    # question
    ("question-empty", {"question": ""}, False, "question", "must not be empty"),
    ("question-blank", {"question": "  \n\t "}, False, "question", "must not be empty"),
    ("question-4001-chars", {"question": "q" * 4001}, False, "question", "is 4001 characters; the limit is 4000"),
    ("question-integer", {"question": 7}, False, "question", "must be a string, not integer"),
    ("question-list", {"question": ["q"]}, False, "question", "must be a string, not array"),
    ("question-null", {"question": None}, False, "question", "must be a string, not null"),
    # tags
    ("tags-string", {"tags": "payments"}, False, "tags", "must be an array of strings, not string"),
    ("tags-object", {"tags": {"a": 1}}, False, "tags", "must be an array of strings, not object"),
    ("tags-non-string-item", {"tags": ["payments", 3]}, False, "tags[1]", "must be a string, not integer"),
    ("tags-empty-item", {"tags": ["payments", ""]}, False, "tags[1]", "must not be empty"),
    ("tags-blank-item", {"tags": [" "]}, False, "tags[0]", "must not be empty"),
    ("tags-65-chars", {"tags": ["t" * 65]}, False, "tags[0]", "is 65 characters; the limit is 64"),
    ("tags-duplicate", {"tags": ["payments", "fact", "payments"]}, False, "tags[2]", "'payments' is listed twice"),
    ("tags-duplicate-draft", {"tags": ["a", "a"]}, True, "tags[1]", "listed twice"),
    ("tags-empty-outside-draft", {"tags": []}, False, "tags", "needs at least one tag"),
    # expectations container
    (
        "expectations-object",
        {"expectations": {"kind": "must-cite"}},
        False,
        "expectations",
        "must be an array, not object",
    ),
    ("expectations-empty-outside-draft", {"expectations": []}, False, "expectations", "needs at least one expectation"),
    (
        "expectation-not-object",
        {"expectations[0]": "must-contain 45"},
        False,
        "expectations[0]",
        "must be an object, not string",
    ),
    ("expectation-null", {"expectations[0]": None}, False, "expectations[0]", "must be an object, not null"),
    # kind
    ("kind-missing", {"expectations[0]": {"value": "45", "why": "w"}}, False, "expectations[0].kind", "is required"),
    (
        "kind-unknown",
        {"expectations[2].kind": "must-quote"},
        False,
        "expectations[2].kind",
        f"'must-quote' is not one of {KINDS_TEXT}",
    ),
    ("kind-wrong-case", {"expectations[0].kind": "Must-Contain"}, False, "expectations[0].kind", "is not one of"),
    ("kind-integer", {"expectations[0].kind": 1}, False, "expectations[0].kind", "is not one of"),
    # must-contain / must-not-contain
    ("contain-value-missing", {"expectations[0].value": DELETE}, False, "expectations[0].value", "is required"),
    ("not-contain-value-missing", {"expectations[1].value": DELETE}, False, "expectations[1].value", "is required"),
    ("contain-value-empty", {"expectations[0].value": ""}, False, "expectations[0].value", "must not be empty"),
    ("not-contain-value-empty", {"expectations[1].value": ""}, False, "expectations[1].value", "must not be empty"),
    (
        "contain-value-integer",
        {"expectations[0].value": 45},
        False,
        "expectations[0].value",
        "must be a string, not integer",
    ),
    (
        "contain-value-list",
        {"expectations[0].value": ["45"]},
        False,
        "expectations[0].value",
        "must be a string, not array",
    ),
    (
        "contain-value-null",
        {"expectations[0].value": None},
        False,
        "expectations[0].value",
        "must be a string, not null",
    ),
    (
        "contain-value-object",
        {"expectations[0].value": {"abstains": True}},
        False,
        "expectations[0].value",
        "must be a string, not object",
    ),
    (
        "contain-match-unknown",
        {"expectations[0].match": "regex"},
        False,
        "expectations[0].match",
        "'regex' is not one of normalized, exact, fuzzy",
    ),
    ("contain-match-uppercase", {"expectations[0].match": "Fuzzy"}, False, "expectations[0].match", "is not one of"),
    ("contain-unknown-key", {"expectations[0].documentId": "doc"}, False, "expectations[0].documentId", "unknown key"),
    ("contain-typo-key", {"expectations[0].treshold": 90}, False, "expectations[0].treshold", "unknown key"),
    # threshold
    (
        "threshold-49",
        {"expectations[0].match": "fuzzy", "expectations[0].threshold": 49},
        False,
        "expectations[0].threshold",
        "49 is outside 50..100",
    ),
    (
        "threshold-101",
        {"expectations[0].match": "fuzzy", "expectations[0].threshold": 101},
        False,
        "expectations[0].threshold",
        "101 is outside 50..100",
    ),
    (
        "threshold-0",
        {"expectations[0].match": "fuzzy", "expectations[0].threshold": 0},
        False,
        "expectations[0].threshold",
        "is outside 50..100",
    ),
    (
        "threshold-float",
        {"expectations[0].match": "fuzzy", "expectations[0].threshold": 90.5},
        False,
        "expectations[0].threshold",
        "must be an integer, not number",
    ),
    (
        "threshold-true",
        {"expectations[0].match": "fuzzy", "expectations[0].threshold": True},
        False,
        "expectations[0].threshold",
        "must be an integer, not boolean",
    ),
    (
        "threshold-string",
        {"expectations[0].match": "fuzzy", "expectations[0].threshold": "90"},
        False,
        "expectations[0].threshold",
        "must be an integer, not string",
    ),
    (
        "threshold-with-normalized",
        {"expectations[0].match": "normalized", "expectations[0].threshold": 90},
        False,
        "expectations[0].threshold",
        "only allowed with match 'fuzzy'",
    ),
    (
        "threshold-with-exact",
        {"expectations[0].match": "exact", "expectations[0].threshold": 90},
        False,
        "expectations[0].threshold",
        "only allowed with match 'fuzzy'",
    ),
    (
        "threshold-with-default-match",
        {"expectations[0].threshold": 90},
        False,
        "expectations[0].threshold",
        "only allowed with match 'fuzzy'",
    ),
    # fuzzy value cap
    (
        "fuzzy-value-257",
        {"expectations[0].match": "fuzzy", "expectations[0].value": "x" * 257},
        False,
        "expectations[0].value",
        "is 257 characters; fuzzy values are limited to 256",
    ),
    (
        "fuzzy-not-contain-value-257",
        {"expectations[1].match": "fuzzy", "expectations[1].value": "y" * 257},
        False,
        "expectations[1].value",
        "fuzzy values are limited to 256",
    ),
    # must-cite
    (
        "cite-documentId-missing",
        {"expectations[2].documentId": DELETE},
        False,
        "expectations[2].documentId",
        "is required",
    ),
    (
        "cite-documentId-empty",
        {"expectations[2].documentId": ""},
        False,
        "expectations[2].documentId",
        "must not be empty",
    ),
    (
        "cite-documentId-blank",
        {"expectations[2].documentId": "   "},
        False,
        "expectations[2].documentId",
        "must not be empty",
    ),
    (
        "cite-documentId-integer",
        {"expectations[2].documentId": 12},
        False,
        "expectations[2].documentId",
        "must be a string, not integer",
    ),
    (
        "cite-documentId-list",
        {"expectations[2].documentId": ["doc"]},
        False,
        "expectations[2].documentId",
        "must be a string, not array",
    ),
    ("cite-unknown-key-value", {"expectations[2].value": "doc"}, False, "expectations[2].value", "unknown key"),
    # behaviour
    (
        "behaviour-value-missing",
        {"expectations[3].value": DELETE},
        False,
        "expectations[3].value",
        "is required: an object with at least one of",
    ),
    (
        "behaviour-value-list",
        {"expectations[3].value": ["abstains"]},
        False,
        "expectations[3].value",
        "must be an object, not array",
    ),
    (
        "behaviour-value-string",
        {"expectations[3].value": "abstains"},
        False,
        "expectations[3].value",
        "must be an object, not string",
    ),
    (
        "behaviour-value-null",
        {"expectations[3].value": None},
        False,
        "expectations[3].value",
        "must be an object, not null",
    ),
    (
        "behaviour-value-empty-object",
        {"expectations[3].value": {}},
        False,
        "expectations[3].value",
        "needs at least one of abstains",
    ),
    (
        "behaviour-value-unknown-key",
        {"expectations[3].value.abstain": True},
        False,
        "expectations[3].value.abstain",
        "unknown key",
    ),
    (
        "behaviour-unknown-key-on-expectation",
        {"expectations[3].match": "exact"},
        False,
        "expectations[3].match",
        "unknown key",
    ),
    (
        "behaviour-abstains-string",
        {"expectations[3].value.abstains": "yes"},
        False,
        "expectations[3].value.abstains",
        "must be true or false, not string",
    ),
    (
        "behaviour-abstains-int",
        {"expectations[3].value.abstains": 1},
        False,
        "expectations[3].value.abstains",
        "must be true or false, not integer",
    ),
    (
        "behaviour-asksClarification-null",
        {"expectations[3].value": {"asksClarification": None}},
        False,
        "expectations[3].value.asksClarification",
        "must be true or false, not null",
    ),
    (
        "behaviour-requiresConfirmation-string",
        {"expectations[3].value": {"requiresConfirmation": "true"}},
        False,
        "expectations[3].value.requiresConfirmation",
        "must be true or false",
    ),
    (
        "behaviour-callsTool-string",
        {"expectations[3].value": {"callsTool": "apply_credit"}},
        False,
        "expectations[3].value.callsTool",
        "must be an array of strings, not string",
    ),
    (
        "behaviour-callsTool-empty-string",
        {"expectations[3].value": {"callsTool": ["a", ""]}},
        False,
        "expectations[3].value.callsTool[1]",
        "must not be empty",
    ),
    (
        "behaviour-callsTool-number",
        {"expectations[3].value": {"callsTool": [3]}},
        False,
        "expectations[3].value.callsTool[0]",
        "must be a string, not integer",
    ),
    (
        "behaviour-neverCallsTool-object",
        {"expectations[3].value": {"neverCallsTool": {"a": 1}}},
        False,
        "expectations[3].value.neverCallsTool",
        "must be an array of strings, not object",
    ),
    (
        "behaviour-neverCallsTool-empty-string",
        {"expectations[3].value": {"neverCallsTool": [""]}},
        False,
        "expectations[3].value.neverCallsTool[0]",
        "must not be empty",
    ),
    (
        "behaviour-neverCallsTool-null-item",
        {"expectations[3].value": {"neverCallsTool": [None]}},
        False,
        "expectations[3].value.neverCallsTool[0]",
        "must be a string, not null",
    ),
    (
        "behaviour-maxSteps-negative",
        {"expectations[3].value": {"maxSteps": -1}},
        False,
        "expectations[3].value.maxSteps",
        "-1 is negative; it must be >= 0",
    ),
    (
        "behaviour-maxSteps-float",
        {"expectations[3].value": {"maxSteps": 1.5}},
        False,
        "expectations[3].value.maxSteps",
        "must be an integer, not number",
    ),
    (
        "behaviour-maxSteps-true",
        {"expectations[3].value": {"maxSteps": True}},
        False,
        "expectations[3].value.maxSteps",
        "must be an integer, not boolean",
    ),
    (
        "behaviour-maxSteps-string",
        {"expectations[3].value": {"maxSteps": "3"}},
        False,
        "expectations[3].value.maxSteps",
        "must be an integer, not string",
    ),
    # why
    ("why-missing", {"expectations[0].why": DELETE}, False, "expectations[0].why", "is required"),
    ("why-missing-cite", {"expectations[2].why": DELETE}, False, "expectations[2].why", "is required"),
    ("why-missing-behaviour", {"expectations[3].why": DELETE}, False, "expectations[3].why", "is required"),
    ("why-empty", {"expectations[1].why": ""}, False, "expectations[1].why", "(it is empty)"),
    ("why-blank", {"expectations[1].why": "  \t"}, False, "expectations[1].why", "(it is empty)"),
    ("why-integer", {"expectations[0].why": 1}, False, "expectations[0].why", "must be a string, not integer"),
    ("why-integer-draft", {"expectations[0].why": 1}, True, "expectations[0].why", "must be a string, not integer"),
    ("why-null-draft", {"expectations[0].why": None}, True, "expectations[0].why", "must be a string, not null"),
    ("why-list-draft", {"expectations[2].why": ["w"]}, True, "expectations[2].why", "must be a string, not array"),
    # invariant
    ("invariant-string", {"invariant": "yes"}, False, "invariant", "must be true or false, not string"),
    ("invariant-int", {"invariant": 1}, False, "invariant", "must be true or false, not integer"),
    ("invariant-null", {"invariant": None}, False, "invariant", "must be true or false, not null"),
    # source
    ("source-string", {"source": "ticket"}, False, "source", "must be an object, not string"),
    ("source-kind-missing", {"source": {"ref": "SUP-1"}}, False, "source.kind", "is required (one of trace, ticket"),
    (
        "source-kind-unknown",
        {"source": {"kind": "email"}},
        False,
        "source.kind",
        "'email' is not one of trace, ticket, bug-report, known-hard, expert, synthetic",
    ),
    ("source-unknown-key", {"source": {"kind": "trace", "url": "http://x"}}, False, "source.url", "unknown key"),
    (
        "source-ref-int",
        {"source": {"kind": "trace", "ref": 1234}},
        False,
        "source.ref",
        "must be a string, not integer",
    ),
    # context
    ("context-list", {"context": ["doc"]}, False, "context", "must be an object, not array"),
    ("context-unknown-key", {"context": {"expectedSource": ["doc"]}}, False, "context.expectedSource", "unknown key"),
    (
        "context-expectedSources-string",
        {"context": {"expectedSources": "doc"}},
        False,
        "context.expectedSources",
        "must be an array of strings, not string",
    ),
    (
        "context-expectedSources-int-item",
        {"context": {"expectedSources": ["doc", 2]}},
        False,
        "context.expectedSources[1]",
        "must be a string, not integer",
    ),
    (
        "context-allowedTools-null",
        {"context": {"allowedTools": None}},
        False,
        "context.allowedTools",
        "must be an array of strings, not null",
    ),
    (
        "context-allowedTools-object-item",
        {"context": {"allowedTools": [{"name": "t"}]}},
        False,
        "context.allowedTools[0]",
        "must be a string, not object",
    ),
    # rubric
    ("rubric-string", {"rubric": "be polite"}, False, "rubric", "must be an array of strings, not string"),
    ("rubric-int-item", {"rubric": ["be polite", 3]}, False, "rubric[1]", "must be a string, not integer"),
    # version / status (added by export)
    ("version-0", {"version": 0}, False, "version", "must be an integer >= 1"),
    ("version-negative", {"version": -2}, False, "version", "must be an integer >= 1"),
    ("version-string", {"version": "1"}, False, "version", "must be an integer >= 1"),
    ("version-true", {"version": True}, False, "version", "must be an integer >= 1"),
    ("version-float", {"version": 1.5}, False, "version", "must be an integer >= 1"),
    ("status-int", {"status": 2}, False, "status", "must be a string, not integer"),
    ("status-null", {"status": None}, False, "status", "must be a string, not null"),
]


@pytest.mark.parametrize(
    ("patch", "draft", "path", "phrase"),
    [pytest.param(patch, draft, path, phrase, id=row_id) for row_id, patch, draft, path, phrase in CASE_RULES],
)
def test_case_rule(patch, draft, path, phrase):
    assert_single_error(errors_of(patched(patch), draft=draft), path, phrase)


def test_case_rule_ids_are_unique():
    ids = [row[0] for row in CASE_RULES] + [row[0] for row in VALID_ROWS]
    assert len(ids) == len(set(ids))


# ---------------------------------------------------------------------------
# Responses (phrasings / wrongAnswers): same rules for both lists
# ---------------------------------------------------------------------------

RESPONSE_RULES = [
    ("answer-missing", {"citations": []}, "answer", "is required (a string, may be empty)"),
    ("answer-integer", {"answer": 45}, "answer", "must be a string, not integer"),
    ("answer-null", {"answer": None}, "answer", "must be a string, not null"),
    ("citations-string", {"answer": "a", "citations": "doc"}, "citations", "must be an array of strings, not string"),
    ("citations-int-item", {"answer": "a", "citations": ["doc", 1]}, "citations[1]", "must be a string, not integer"),
    ("retrieved-string", {"answer": "a", "retrieved": "doc"}, "retrieved", "must be an array of strings, not string"),
    ("toolCalls-object", {"answer": "a", "toolCalls": {"name": "t"}}, "toolCalls", "must be an array, not object"),
    ("toolCalls-string", {"answer": "a", "toolCalls": "lookup"}, "toolCalls", "must be an array, not string"),
    ("toolCall-item-string", {"answer": "a", "toolCalls": ["lookup"]}, "toolCalls[0]", "must be an object, not string"),
    (
        "toolCall-missing-name",
        {"answer": "a", "toolCalls": [{"name": "x"}, {"arguments": {}}]},
        "toolCalls[1].name",
        "is required",
    ),
    (
        "toolCall-name-int",
        {"answer": "a", "toolCalls": [{"name": 3}]},
        "toolCalls[0].name",
        "must be a string, not integer",
    ),
    ("steps-negative", {"answer": "a", "steps": -1}, "steps", "-1 is negative; it must be >= 0"),
    ("steps-true", {"answer": "a", "steps": True}, "steps", "must be an integer, not boolean"),
    ("steps-float", {"answer": "a", "steps": 2.5}, "steps", "must be an integer, not number"),
    ("abstained-string", {"answer": "a", "abstained": "no"}, "abstained", "must be true or false, not string"),
    ("abstained-int", {"answer": "a", "abstained": 0}, "abstained", "must be true or false, not integer"),
    (
        "askedClarification-null",
        {"answer": "a", "askedClarification": None},
        "askedClarification",
        "must be true or false",
    ),
    (
        "requestedConfirmation-string",
        {"answer": "a", "requestedConfirmation": "yes"},
        "requestedConfirmation",
        "must be true or false",
    ),
]


@pytest.mark.parametrize("key", ["phrasings", "wrongAnswers"])
@pytest.mark.parametrize(
    ("response", "subpath", "phrase"),
    [pytest.param(resp, sub, phrase, id=row_id) for row_id, resp, sub, phrase in RESPONSE_RULES],
)
def test_response_rule_inside_case(key, response, subpath, phrase):
    case = patched({key: [{"answer": "fine"}, response]})
    assert_single_error(errors_of(case), f"{key}[1].{subpath}", phrase)


@pytest.mark.parametrize("key", ["phrasings", "wrongAnswers"])
@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param({"answer": "a"}, "must be an array of responses, not object", id="object"),
        pytest.param("a", "must be an array of responses, not string", id="string"),
        pytest.param(None, "must be an array of responses, not null", id="null"),
    ],
)
def test_response_list_not_an_array(key, value, phrase):
    assert_single_error(errors_of(patched({key: value})), key, phrase)


@pytest.mark.parametrize("key", ["phrasings", "wrongAnswers"])
@pytest.mark.parametrize(
    ("item", "phrase"),
    [
        pytest.param("Net 45.", "must be an object, not string", id="string"),
        pytest.param(["Net 45."], "must be an object, not array", id="array"),
        pytest.param(None, "must be an object, not null", id="null"),
    ],
)
def test_response_item_not_an_object(key, item, phrase):
    assert_single_error(errors_of(patched({key: [{"answer": "a"}, item]})), f"{key}[1]", phrase)


def test_response_extra_keys_everywhere_are_fine():
    resp = {
        "answer": "a",
        "unknownTopLevel": 1,
        "toolCalls": [{"name": "t", "arguments": {"anything": [1, 2]}, "callId": "c1"}],
        "meta": {"nested": True},
    }
    assert validate_response(resp, "phrasings[0]") == []
    assert errors_of(patched({"phrasings": [resp], "wrongAnswers": [resp]})) == []


def test_validate_response_uses_given_path():
    errors = validate_response({"answer": 1, "steps": -3}, "wrongAnswers[4]")
    assert [str(e) for e in errors] == [
        "wrongAnswers[4].answer: must be a string, not integer",
        "wrongAnswers[4].steps: -3 is negative; it must be >= 0",
    ]


# ---------------------------------------------------------------------------
# Exact messages (the spec's own example) and top-level shapes
# ---------------------------------------------------------------------------


def test_spec_example_message_is_exact():
    case = patched({"expectations[1]": {"kind": "must-include"}})
    assert [str(e) for e in errors_of(case)] == [f"expectations[1].kind: 'must-include' is not one of {KINDS_TEXT}"]


def test_spec_example_message_is_exact_via_validate_expectation():
    errors = validate_expectation({"kind": "must-include", "value": "x", "why": "w"}, "expectations[1]", draft=False)
    assert [str(e) for e in errors] == [
        "expectations[1].kind: 'must-include' is not one of must-contain, must-not-contain, must-cite, behaviour"
    ]


@pytest.mark.parametrize(
    ("obj", "type_name"),
    [
        pytest.param([], "array", id="list"),
        pytest.param([valid_case()], "array", id="list-of-case"),
        pytest.param("northline-terms", "string", id="string"),
        pytest.param(None, "null", id="null"),
        pytest.param(42, "integer", id="integer"),
        pytest.param(True, "boolean", id="boolean"),
    ],
)
@pytest.mark.parametrize("draft", [False, True], ids=["final", "draft"])
def test_non_object_top_level(obj, type_name, draft):
    errors = errors_of(obj, draft=draft)
    assert len(errors) == 1
    assert errors[0].path == ""
    assert str(errors[0]) == errors[0].message == f"a case must be a JSON object, not {type_name}"


def test_empty_object_reports_every_required_key():
    errors = errors_of({})
    assert sorted(e.path for e in errors) == ["expectations", "id", "question", "tags"]
    assert all(e.message == "is required" for e in errors)


def test_several_errors_are_all_reported():
    case = patched(
        {
            "id": "Bad Id",
            "question": "",
            "tags": ["a", 1],
            "colour": "red",
            "invariant": "no",
            "expectations[0].kind": "must-include",
            "expectations[1].why": DELETE,
            "expectations[2].documentId": "",
            "expectations[3].value": {"maxSteps": -1, "callsTool": "x"},
            "source": {"kind": "email"},
            "context": {"foo": 1},
            "rubric": "be nice",
            "phrasings": [{"answer": 1}, {"answer": "ok", "steps": True}],
            "wrongAnswers": "nope",
            "version": 0,
        }
    )
    assert sorted(e.path for e in errors_of(case)) == sorted(
        [
            "colour",
            "id",
            "question",
            "tags[1]",
            "expectations[0].kind",
            "expectations[1].why",
            "expectations[2].documentId",
            "expectations[3].value.callsTool",
            "expectations[3].value.maxSteps",
            "invariant",
            "source.kind",
            "context.foo",
            "rubric",
            "phrasings[0].answer",
            "phrasings[1].steps",
            "wrongAnswers",
            "version",
        ]
    )


def test_several_errors_in_one_expectation_are_all_reported():
    exp = {"kind": "must-contain", "value": 3, "match": "regex", "threshold": 10, "extra": 1}
    paths = [e.path for e in validate_expectation(exp, "expectations[0]", draft=False)]
    assert sorted(paths) == sorted(
        [
            "expectations[0].why",
            "expectations[0].extra",
            "expectations[0].value",
            "expectations[0].match",
            "expectations[0].threshold",
        ]
    )


def test_several_errors_in_one_behaviour_are_all_reported():
    value = {"abstains": "y", "callsTool": [1, ""], "maxSteps": -1, "typo": True}
    assert sorted(str(e) for e in validate_behaviour(value, "v")) == sorted(
        [
            "v.typo: unknown key (allowed: abstains, asksClarification, callsTool, neverCallsTool, "
            "requiresConfirmation, maxSteps)",
            "v.abstains: must be true or false, not string",
            "v.callsTool[0]: must be a string, not integer",
            "v.callsTool[1]: must not be empty",
            "v.maxSteps: -1 is negative; it must be >= 0",
        ]
    )


# ---------------------------------------------------------------------------
# Draft relaxations: exactly whys, tags and expectations
# ---------------------------------------------------------------------------

DRAFT_RELAXED = [
    ("no-tags", {"tags": []}, ["tags"]),
    ("no-expectations", {"expectations": []}, ["expectations"]),
    ("why-missing", {"expectations[0].why": DELETE}, ["expectations[0].why"]),
    ("why-empty", {"expectations[2].why": ""}, ["expectations[2].why"]),
    ("why-blank", {"expectations[3].why": "   "}, ["expectations[3].why"]),
    (
        "all-whys-missing",
        {f"expectations[{i}].why": DELETE for i in range(4)},
        [f"expectations[{i}].why" for i in range(4)],
    ),
    (
        "everything-relaxed-at-once",
        {"tags": [], "expectations": []},
        ["tags", "expectations"],
    ),
]


@pytest.mark.parametrize(
    ("patch", "final_paths"),
    [pytest.param(patch, paths, id=row_id) for row_id, patch, paths in DRAFT_RELAXED],
)
def test_draft_relaxes_only_why_tags_expectations(patch, final_paths):
    case = patched(patch)
    assert errors_of(case, draft=True) == []
    assert sorted(e.path for e in errors_of(case, draft=False)) == sorted(final_paths)


def test_draft_still_enforces_everything_else():
    case = patched({"tags": [], "expectations[0].why": DELETE, "expectations[1].match": "regex", "id": "X"})
    assert sorted(e.path for e in errors_of(case, draft=True)) == ["expectations[1].match", "id"]


# ---------------------------------------------------------------------------
# validate_expectation / validate_behaviour directly
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exp", "draft", "expected"),
    [
        pytest.param({"kind": "must-contain", "value": "45", "why": "w"}, False, [], id="contain-ok"),
        pytest.param({"kind": "must-cite", "documentId": "d"}, True, [], id="cite-no-why-draft"),
        pytest.param(
            {"kind": "must-cite", "documentId": "d"},
            False,
            ["e.why: is required: say what this assertion protects"],
            id="cite-no-why-final",
        ),
        pytest.param(
            {"kind": "behaviour", "value": {"abstains": True}, "why": ""},
            False,
            ["e.why: must say what the assertion protects (it is empty)"],
            id="behaviour-empty-why-final",
        ),
        pytest.param({}, False, [f"e.kind: is required (one of {KINDS_TEXT})"], id="empty-object"),
        pytest.param(7, False, ["e: must be an object, not integer"], id="integer"),
        pytest.param(
            {"kind": "must-contain", "value": "x", "match": "fuzzy", "threshold": 101, "why": "w"},
            False,
            ["e.threshold: 101 is outside 50..100"],
            id="threshold-101",
        ),
    ],
)
def test_validate_expectation_direct(exp, draft, expected):
    assert [str(e) for e in validate_expectation(exp, "e", draft=draft)] == expected


@pytest.mark.parametrize(
    ("value", "present", "expected_path", "phrase"),
    [
        pytest.param(None, False, "b", "is required", id="absent"),
        pytest.param(None, True, "b", "must be an object, not null", id="null"),
        pytest.param([], True, "b", "must be an object, not array", id="list"),
        pytest.param({}, True, "b", "needs at least one of", id="empty"),
        pytest.param({"abstains": True, "other": 1}, True, "b.other", "unknown key", id="unknown-key"),
    ],
)
def test_validate_behaviour_direct(value, present, expected_path, phrase):
    errors = validate_behaviour(value, "b", present=present)
    assert_single_error(errors, expected_path, phrase)


def test_validate_behaviour_all_keys_ok():
    value = {
        "abstains": True,
        "asksClarification": False,
        "callsTool": ["a"],
        "neverCallsTool": ["b"],
        "requiresConfirmation": True,
        "maxSteps": 0,
    }
    assert validate_behaviour(value, "b") == []


# ---------------------------------------------------------------------------
# Short golden-set format
# ---------------------------------------------------------------------------

SHORT = {
    "id": "refund-tool",
    "input": "Please refund invoice 1234",
    "expect_tool": "apply_credit",
    "rubric": "confirms before refunding",
    "tags": ["refunds"],
}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(SHORT, True, id="full-short-line"),
        pytest.param({"id": "x", "input": "q"}, True, id="id-and-input-only"),
        pytest.param({"input": "q"}, True, id="input-only"),
        pytest.param(valid_case(), False, id="full-format-case"),
        pytest.param({**SHORT, "question": "q"}, False, id="input-and-question"),
        pytest.param({"id": "x", "expect_tool": "t"}, False, id="no-input"),
        pytest.param({}, False, id="empty-object"),
        pytest.param(["input"], False, id="list"),
        pytest.param("input", False, id="string"),
        pytest.param(None, False, id="null"),
    ],
)
def test_is_short_format(obj, expected):
    assert is_short_format(obj) is expected


def test_convert_short_format_maps_keys():
    case, errors = convert_short_format(dict(SHORT))
    assert errors == []
    assert case == {
        "id": "refund-tool",
        "question": "Please refund invoice 1234",
        "tags": ["refunds"],
        "expectations": [{"kind": "behaviour", "value": {"callsTool": ["apply_credit"]}}],
        "rubric": ["confirms before refunding"],
    }
    assert "why" not in case["expectations"][0]


def test_converted_short_format_is_a_draft_only():
    case, _ = convert_short_format(dict(SHORT))
    assert validate_case(case, draft=True) == []
    assert [str(e) for e in validate_case(case, draft=False)] == [
        "expectations[0].why: is required: say what this assertion protects"
    ]


@pytest.mark.parametrize(
    ("overrides", "expected_expectations"),
    [
        pytest.param({"expect_tool": None}, [], id="expect_tool-null"),
        pytest.param({"expect_tool": DELETE}, [], id="expect_tool-absent"),
        pytest.param(
            {"expect_tool": "lookup_invoices"},
            [{"kind": "behaviour", "value": {"callsTool": ["lookup_invoices"]}}],
            id="expect_tool-other-name",
        ),
    ],
)
def test_convert_short_format_expect_tool(overrides, expected_expectations):
    case, errors = convert_short_format(patched(overrides, SHORT))
    assert errors == []
    assert case["expectations"] == expected_expectations
    assert validate_case(case, draft=True) == []


def test_convert_short_format_without_tool_fails_outside_draft_for_missing_expectation():
    case, _ = convert_short_format(patched({"expect_tool": None}, SHORT))
    assert [e.path for e in validate_case(case, draft=False)] == ["expectations"]


@pytest.mark.parametrize(
    ("rubric", "expected"),
    [
        pytest.param("be polite", ["be polite"], id="string"),
        pytest.param(["a", "b"], ["a", "b"], id="list-kept"),
        pytest.param([], [], id="empty-list"),
        pytest.param("   ", [], id="blank-string"),
    ],
)
def test_convert_short_format_rubric(rubric, expected):
    case, errors = convert_short_format({**SHORT, "rubric": rubric})
    assert errors == []
    assert case["rubric"] == expected


def test_convert_short_format_without_rubric_or_tags():
    case, errors = convert_short_format({"id": "x", "input": "q", "expect_tool": "t"})
    assert errors == []
    assert "rubric" not in case
    assert case["tags"] == []
    assert validate_case(case, draft=True) == []
    assert sorted(e.path for e in validate_case(case, draft=False)) == ["expectations[0].why", "tags"]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param({**SHORT, "why": "x"}, ["why"], id="unknown-key"),
        pytest.param({**SHORT, "expectTool": "x"}, ["expectTool"], id="camelcase-typo"),
        pytest.param({k: v for k, v in SHORT.items() if k != "id"}, ["id"], id="missing-id"),
        pytest.param({"id": "x", "expect_tool": "t", "input2": "q"}, ["input2", "input"], id="missing-input"),
        pytest.param({"rubric": "r"}, ["id", "input"], id="missing-id-and-input"),
        pytest.param({**SHORT, "expect_tool": ""}, ["expect_tool"], id="expect_tool-empty"),
        pytest.param({**SHORT, "expect_tool": "  "}, ["expect_tool"], id="expect_tool-blank"),
        pytest.param({**SHORT, "expect_tool": ["t"]}, ["expect_tool"], id="expect_tool-list"),
    ],
)
def test_convert_short_format_errors(obj, expected):
    case, errors = convert_short_format(obj)
    assert case is None
    assert sorted(e.path for e in errors) == sorted(expected)


def test_convert_short_format_error_messages():
    _, errors = convert_short_format({"input": "q", "extra": 1})
    texts = sorted(str(e) for e in errors)
    assert texts == ["extra: unknown key (allowed: id, input, expect_tool, rubric, tags)", "id: is required"]


def test_convert_short_format_passes_bad_values_on_to_validate_case():
    case, errors = convert_short_format({"id": "Bad Id", "input": "", "tags": ["t", "t"]})
    assert errors == []
    assert sorted(e.path for e in validate_case(case, draft=True)) == ["id", "question", "tags[1]"]


# ---------------------------------------------------------------------------
# Regressions: a trailing newline in an id; every tag error reported together
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", ["northline-terms\n", "a" * 100 + "\n"], ids=["slug-newline", "101-chars-newline"])
def test_id_with_trailing_newline_is_refused(case_id):
    assert [e.path for e in errors_of(patched({"id": case_id}))] == ["id"]


def test_duplicate_tag_reported_alongside_other_tag_errors():
    errors = errors_of(patched({"tags": ["a", "a", ""]}))
    assert sorted(e.path for e in errors) == ["tags[1]", "tags[2]"]
