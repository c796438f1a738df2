"""Table-driven tests of the scoring engine, one table per rule of scoring.md."""

from __future__ import annotations

import dataclasses
import json

import pytest
from rapidfuzz import fuzz

import cases.scoring as scoring
from cases.scoring import (
    DEFAULT_CLARIFICATION_PHRASES,
    DEFAULT_REFUSAL_PHRASES,
    CaseScore,
    DetectorConfig,
    ExpectationResult,
    ResponseError,
    check_response,
    compile_case,
    normalize,
    score_case,
)


def contains(value: str, answer: str, match: str = "normalized", **extra: object) -> ExpectationResult:
    exp = {"kind": "must-contain", "value": value, "match": match, "why": "test", **extra}
    return score_case([exp], {"answer": answer}).results[0]


def behaviour(value: dict, response: dict, config: DetectorConfig | None = None) -> ExpectationResult:
    return score_case([{"kind": "behaviour", "value": value}], response, config=config).results[0]


# --------------------------------------------------------------------------- N(text)

NORMALIZE_CASES = [
    ("nfkc-fullwidth-digits", "net \uff14\uff15", "net 45"),
    ("nfkc-ligature", "\ufb01nal", "final"),
    ("nfkc-superscript", "m\u00b2", "m2"),
    ("composed-accent", "Caf\u00e9", "caf\u00e9"),
    ("decomposed-accent-composes", "Cafe\u0301", "caf\u00e9"),
    ("casefold-sharp-s", "Stra\u00dfe", "strasse"),
    ("casefold-upper", "NET 45", "net 45"),
    ("casefold-then-nfkc-again", "\u00df\u0301", "s\u015b"),
    ("single-quotes", "\u2018a\u2019 \u201ab\u201b 5\u2032", "'a' 'b' 5'"),
    ("double-quotes", "\u201ca\u201d \u201eb\u201d 5\u2033", '"a" "b" 5"'),
    ("double-prime-is-one-quote-not-two-primes", "\u2033", '"'),
    ("dashes", "a\u2010b\u2011c\u2012d\u2013e\u2014f\u2015g", "a-b-c-d-e-f-g"),
    ("minus-sign", "\u22125", "-5"),
    ("no-break-space", "net\u00a045", "net 45"),
    ("narrow-no-break-space", "net\u202f45", "net 45"),
    ("figure-and-em-space", "net\u2007\u200345", "net 45"),
    ("ideographic-space", "net\u300045", "net 45"),
    ("line-separator", "net\u202845", "net 45"),
    ("zero-width-space", "ne\u200bt 4\u200c5\u200d", "net 45"),
    ("word-joiner-and-bom", "\ufeffnet\u2060 45", "net 45"),
    ("zero-width-between-letter-and-accent", "cafe\u200b\u0301", "caf\u00e9"),
    ("whitespace-runs", "  net \t\n\r 45  ", "net 45"),
    ("ascii-separators", "net\x1c\x1d45\x0b\x0c", "net 45"),
    ("only-spaces", " \u00a0\t\u200b ", ""),
    ("empty", "", ""),
    ("fullwidth-question-mark", "why\uff1f", "why?"),
]


@pytest.mark.parametrize(("raw", "expected"), [c[1:] for c in NORMALIZE_CASES], ids=[c[0] for c in NORMALIZE_CASES])
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected
    assert normalize(expected) == expected  # idempotent on every row


def test_normalize_never_raises_on_lone_surrogates() -> None:
    assert normalize("a\ud800 B") == "a\ud800 b"


# --------------------------------------------------------------------------- normalized mode

NORMALIZED_CASES = [
    # the spec's own examples
    ("net-45", "45", "Northline is on net 45 terms.", True),
    ("45-day", "45", "a 45-day payment window", True),
    ("parenthesised", "45", "terms (45) apply", True),
    ("not-in-450", "45", "we invoiced 450 units", False),
    ("not-in-1450", "45", "total 1450", False),
    ("30-not-in-2030", "30", "valid until 2030", False),
    # every occurrence is checked, not only the first
    ("later-occurrence", "45", "450 and 45", True),
    ("overlapping-occurrences", "aa", "aaa aa", True),
    ("start-and-end-of-answer", "45", "45", True),
    ("percent-after", "45", "45% upfront", True),
    ("letter-after", "45", "45th day", False),
    ("letter-before", "net", "cabinet 45", False),
    # a value starting/ending with punctuation has no boundary on that side
    ("punct-start-no-start-boundary", "-45", "x-45 days", True),
    ("punct-start-end-boundary-kept", "-45", "x-450 days", False),
    ("punct-end-no-end-boundary", "net 45,", "net 45,5", True),
    ("unicode-letter-is-a-letter", "caf\u00e9", "cafés nearby", False),
    # normalisation applies to both sides
    ("case", "Net 45", "NET 45 TERMS", True),
    ("curly-answer-straight-value", "don't", "I don\u2019t know", True),
    ("straight-answer-curly-value", "don\u2019t", "I don't know", True),
    ("curly-double-quotes", '"net 45"', "the \u201cnet 45\u201d clause", True),
    ("en-dash-vs-hyphen", "45-day", "a 45\u2013day window", True),
    ("fullwidth-digits", "45", "net \uff14\uff15 terms", True),
    ("composed-value-decomposed-answer", "caf\u00e9", "the cafe\u0301 account", True),
    ("decomposed-value-composed-answer", "cafe\u0301", "the caf\u00e9 account", True),
    ("zero-width-inside-answer", "net 45", "ne\u200bt 4\u200b5 terms", True),
    ("no-break-space-in-answer", "net 45", "net\u00a045 terms", True),
    ("whitespace-run-in-answer", "net 45", "net \n\t 45 terms", True),
    ("hyphen-is-not-a-space", "payment terms", "the payment-terms are", False),
    ("empty-answer", "45", "", False),
]


@pytest.mark.parametrize(
    ("value", "answer", "found"), [c[1:] for c in NORMALIZED_CASES], ids=[c[0] for c in NORMALIZED_CASES]
)
@pytest.mark.parametrize("kind", ["must-contain", "must-not-contain"])
def test_normalized_mode(kind: str, value: str, answer: str, found: bool) -> None:
    result = score_case([{"kind": kind, "value": value}], {"answer": answer}).results[0]
    assert result.kind == kind
    assert result.passed is (found if kind == "must-contain" else not found)


def test_normalized_is_the_default_match() -> None:
    exp = {"kind": "must-contain", "value": "Net 45"}
    assert score_case([exp], {"answer": "on NET\u00a045 terms"}).passed


def test_normalized_detail_shows_position_and_excerpt() -> None:
    answer = "As agreed in 2026, Northline is on net 45 terms under the supply agreement."
    result = contains("45", answer)
    assert result.detail.startswith('found "45" at char 39 of the normalised answer: ')
    assert "northline is on net 45 terms under" in result.detail
    assert "…" in result.detail  # excerpt is cut, and says so
    assert len(result.detail) < 300


def test_normalized_detail_when_only_inside_a_longer_token() -> None:
    result = score_case([{"kind": "must-not-contain", "value": "30"}], {"answer": "valid until 2030."}).results[0]
    assert result.passed
    assert result.detail.startswith('"30" not found at token boundaries')
    assert "only inside a longer token at char 14" in result.detail
    assert '"valid until 2030."' in result.detail


def test_normalized_detail_when_absent() -> None:
    result = contains("net 60", "net 45")
    assert not result.passed
    assert result.detail == '"net 60" not found at token boundaries in the normalised answer'


def test_value_empty_after_normalisation_trivially_occurs() -> None:
    result = contains(" \u200b ", "anything")
    assert result.passed
    assert "empty after normalisation" in result.detail


# --------------------------------------------------------------------------- exact mode

EXACT_CASES = [
    ("same", "Net 45", "Terms: Net 45.", True),
    ("case-sensitive", "net 45", "Terms: Net 45.", False),
    ("spacing-matters", "net 45", "net  45", False),
    ("no-break-space-is-not-a-space", "net 45", "net\u00a045", False),
    ("quotes-not-normalised", "don't", "don\u2019t", False),
    ("no-nfkc", "45", "\uff14\uff15", False),
    ("no-token-boundaries", "45", "1450", True),
    ("multi-line", "a\nb", "x a\nb y", True),
]


@pytest.mark.parametrize(("value", "answer", "found"), [c[1:] for c in EXACT_CASES], ids=[c[0] for c in EXACT_CASES])
@pytest.mark.parametrize("kind", ["must-contain", "must-not-contain"])
def test_exact_mode(kind: str, value: str, answer: str, found: bool) -> None:
    exp = {"kind": kind, "value": value, "match": "exact"}
    result = score_case([exp], {"answer": answer}).results[0]
    assert result.passed is (found if kind == "must-contain" else not found)


def test_exact_details() -> None:
    found = contains("Net 45", "Terms: Net 45.", "exact")
    assert found.detail == 'found "Net 45" (exact) at char 7: "Terms: Net 45."'
    missed = contains("net 45", "Terms: Net 45.", "exact")
    assert "not found in the raw answer" in missed.detail
    assert "differs only in case at char 7" in missed.detail


# --------------------------------------------------------------------------- fuzzy mode

# A 10-character value with one substituted character scores exactly 90.0.
TIE_VALUE, TIE_ANSWER = "rush order", "a rush ordar was placed"
LOW_VALUE, LOW_ANSWER = "payment terms", "the paymnt trms are"


def test_fuzzy_fixtures_have_the_scores_the_tests_rely_on() -> None:
    assert fuzz.partial_ratio(normalize(TIE_VALUE), normalize(TIE_ANSWER)) == 90.0
    low = fuzz.partial_ratio(normalize(LOW_VALUE), normalize(LOW_ANSWER))
    assert 84 < low < 85


FUZZY_CASES = [
    ("tie-at-threshold-passes", TIE_VALUE, TIE_ANSWER, 90, True),
    ("threshold-just-above-score", TIE_VALUE, TIE_ANSWER, 91, False),
    ("threshold-just-below-score", TIE_VALUE, TIE_ANSWER, 89, True),
    ("default-threshold-is-90", TIE_VALUE, TIE_ANSWER, None, True),
    ("below-default", LOW_VALUE, LOW_ANSWER, None, False),
    ("low-threshold", LOW_VALUE, LOW_ANSWER, 84, True),
    ("normalised-both-sides", "EARLY PAYMENT\u00a0DISCOUNT", "an early payment discount", None, True),
    ("typo-forgiven", "early payment discount", "an early paymant discount applies", None, True),
    ("unrelated", "force majeure", "net 45 terms", None, False),
    ("empty-answer", "net 45", "", None, False),
]


@pytest.mark.parametrize(
    ("value", "answer", "threshold", "found"), [c[1:] for c in FUZZY_CASES], ids=[c[0] for c in FUZZY_CASES]
)
@pytest.mark.parametrize("kind", ["must-contain", "must-not-contain"])
def test_fuzzy_mode(kind: str, value: str, answer: str, threshold: int | None, found: bool) -> None:
    exp: dict = {"kind": kind, "value": value, "match": "fuzzy"}
    if threshold is not None:
        exp["threshold"] = threshold
    result = score_case([exp], {"answer": answer}).results[0]
    assert result.passed is (found if kind == "must-contain" else not found)


def test_fuzzy_detail_shows_score_threshold_and_excerpt() -> None:
    passed = contains(TIE_VALUE, TIE_ANSWER, "fuzzy", threshold=90)
    assert "partial_ratio 90.0 >= 90" in passed.detail
    assert "rush ordar" in passed.detail
    failed = contains(TIE_VALUE, TIE_ANSWER, "fuzzy", threshold=91)
    assert "partial_ratio 90.0 < 91" in failed.detail
    perfect = contains("Net 45", "on net 45 terms", "fuzzy")
    assert perfect.detail == '"Net 45": partial_ratio 100.0 >= 90, best match at char 3 of the normalised answer: ' + (
        '"on net 45 terms"'
    )


def test_fuzzy_score_shown_never_contradicts_the_verdict() -> None:
    # 89.96 rounds to "90.0"; the detail must not read "90.0 < 90".
    assert scoring._fmt_score(89.96, 90) == "89.96"
    assert scoring._fmt_score(93.333, 90) == "93.3"


def test_threshold_outside_fuzzy_is_refused_like_the_validator_refuses_it() -> None:
    with pytest.raises(ValueError, match="threshold: is only allowed with match 'fuzzy'"):
        contains("45", "net 45", "normalized", threshold=100)


# --------------------------------------------------------------------------- must-cite

CITE_CASES = [
    ("cited", "doc-a", ["doc-b", "doc-a"], True),
    ("citation-trimmed", "doc-a", ["  doc-a\n"], True),
    ("document-id-trimmed", " doc-a ", ["doc-a"], True),
    ("case-sensitive", "Doc-A", ["doc-a"], False),
    ("inner-space-kept", "doc a", ["doca"], False),
    ("no-prefix-match", "doc-a", ["doc-a-2024"], False),
    ("empty-citations", "doc-a", [], False),
    ("citations-absent", "doc-a", None, False),
]


@pytest.mark.parametrize(
    ("document_id", "citations", "passed"), [c[1:] for c in CITE_CASES], ids=[c[0] for c in CITE_CASES]
)
def test_must_cite(document_id: str, citations: list[str] | None, passed: bool) -> None:
    response: dict = {"answer": "x"}
    if citations is not None:
        response["citations"] = citations
    result = score_case([{"kind": "must-cite", "documentId": document_id}], response).results[0]
    assert result.kind == "must-cite"
    assert result.passed is passed


def test_must_cite_details() -> None:
    ok = score_case([{"kind": "must-cite", "documentId": "b"}], {"answer": "", "citations": ["a", " b"]})
    assert ok.results[0].detail == '"b" is cited (citation 2 of 2)'
    case = score_case([{"kind": "must-cite", "documentId": "Doc-A"}], {"answer": "", "citations": ["doc-a"]})
    assert "case-sensitive" in case.results[0].detail
    none = score_case([{"kind": "must-cite", "documentId": "a"}], {"answer": ""})
    assert "no citations" in none.results[0].detail


# --------------------------------------------------------------------------- behaviour

BEHAVIOUR_CASES = [
    # abstains: explicit field, then the detector
    ("abstains-explicit-true", {"abstains": True}, {"answer": "Net 45.", "abstained": True}, True),
    ("abstains-detected-phrase", {"abstains": True}, {"answer": "Sorry, I don't know that."}, True),
    ("abstains-detected-curly-quote", {"abstains": True}, {"answer": "I DON\u2019T KNOW."}, True),
    ("abstains-detected-other-phrase", {"abstains": True}, {"answer": "I'm not able to see invoices."}, True),
    ("abstains-empty-answer", {"abstains": True}, {"answer": ""}, True),
    ("abstains-blank-answer", {"abstains": True}, {"answer": " \u00a0\u200b\n"}, True),
    ("abstains-not-detected", {"abstains": True}, {"answer": "Net 45."}, False),
    # The spec says "containing": plain containment in N(answer), not token boundaries.
    ("abstains-phrase-inside-longer-text", {"abstains": True}, {"answer": "Khi don't know-how."}, True),
    ("abstains-no-phrase", {"abstains": True}, {"answer": "I do know: net 45."}, False),
    ("explicit-false-beats-phrase", {"abstains": True}, {"answer": "I don't know.", "abstained": False}, False),
    ("explicit-true-beats-answer", {"abstains": False}, {"answer": "Net 45.", "abstained": True}, False),
    ("explicit-false-beats-empty", {"abstains": False}, {"answer": "", "abstained": False}, True),
    ("does-not-abstain", {"abstains": False}, {"answer": "Net 45."}, True),
    # asksClarification
    ("clarify-detected", {"asksClarification": True}, {"answer": "Do you mean the 2024 or 2026 one?"}, True),
    ("clarify-fullwidth-question-mark", {"asksClarification": True}, {"answer": "Which one\uff1f"}, True),
    ("clarify-phrase-without-question-mark", {"asksClarification": True}, {"answer": "Which one: 2024."}, False),
    ("clarify-question-without-phrase", {"asksClarification": True}, {"answer": "Is it net 45?"}, False),
    ("clarify-phrase-contained", {"asksClarification": True}, {"answer": "Which ones?"}, True),
    ("clarify-no-phrase", {"asksClarification": True}, {"answer": "Which invoices?"}, False),
    (
        "clarify-explicit-false-beats-detector",
        {"asksClarification": True},
        {"answer": "Could you clarify?", "askedClarification": False},
        False,
    ),
    ("clarify-explicit-true", {"asksClarification": True}, {"answer": "", "askedClarification": True}, True),
    ("clarify-not-asked", {"asksClarification": False}, {"answer": "Net 45."}, True),
    # callsTool / neverCallsTool
    ("calls-tool", {"callsTool": ["a"]}, {"answer": "", "toolCalls": [{"name": "b"}, {"name": "a"}]}, True),
    ("calls-all-tools", {"callsTool": ["a", "b"]}, {"answer": "", "toolCalls": [{"name": "a"}, {"name": "b"}]}, True),
    ("calls-tool-one-missing", {"callsTool": ["a", "c"]}, {"answer": "", "toolCalls": [{"name": "a"}]}, False),
    ("calls-tool-none-called", {"callsTool": ["a"]}, {"answer": ""}, False),
    ("calls-tool-names-exact", {"callsTool": ["A"]}, {"answer": "", "toolCalls": [{"name": "a"}]}, False),
    ("never-calls-ok", {"neverCallsTool": ["x"]}, {"answer": "", "toolCalls": [{"name": "a"}]}, True),
    ("never-calls-violated", {"neverCallsTool": ["x", "a"]}, {"answer": "", "toolCalls": [{"name": "a"}]}, False),
    ("never-calls-no-tool-calls", {"neverCallsTool": ["x"]}, {"answer": ""}, True),
    # requiresConfirmation
    ("confirm-true-requested", {"requiresConfirmation": True}, {"answer": "", "requestedConfirmation": True}, True),
    (
        "confirm-true-not-requested",
        {"requiresConfirmation": True},
        {"answer": "", "requestedConfirmation": False},
        False,
    ),
    ("confirm-true-absent", {"requiresConfirmation": True}, {"answer": "Shall I?"}, False),
    ("confirm-false-absent", {"requiresConfirmation": False}, {"answer": ""}, True),
    ("confirm-false-requested", {"requiresConfirmation": False}, {"answer": "", "requestedConfirmation": True}, False),
    # maxSteps
    ("steps-equal-limit", {"maxSteps": 2}, {"answer": "", "steps": 2}, True),
    ("steps-over-limit", {"maxSteps": 2}, {"answer": "", "steps": 3}, False),
    (
        "steps-field-beats-tool-count",
        {"maxSteps": 1},
        {"answer": "", "steps": 1, "toolCalls": [{"name": "a"}] * 3},
        True,
    ),
    ("steps-counted-from-tool-calls", {"maxSteps": 1}, {"answer": "", "toolCalls": [{"name": "a"}] * 2}, False),
    ("steps-counted-within-limit", {"maxSteps": 2}, {"answer": "", "toolCalls": [{"name": "a"}] * 2}, True),
    ("max-steps-zero-no-calls", {"maxSteps": 0}, {"answer": ""}, True),
    ("steps-integral-float", {"maxSteps": 2}, {"answer": "", "steps": 2.0}, True),
    # several keys: all must hold
    (
        "combined-all-hold",
        {"abstains": True, "neverCallsTool": ["apply_credit"], "maxSteps": 1, "requiresConfirmation": False},
        {"answer": "I cannot help with that.", "toolCalls": [{"name": "search"}]},
        True,
    ),
    (
        "combined-one-fails",
        {"abstains": True, "neverCallsTool": ["apply_credit"]},
        {"answer": "I cannot help with that.", "toolCalls": [{"name": "apply_credit"}]},
        False,
    ),
]


@pytest.mark.parametrize(
    ("value", "response", "passed"), [c[1:] for c in BEHAVIOUR_CASES], ids=[c[0] for c in BEHAVIOUR_CASES]
)
def test_behaviour(value: dict, response: dict, passed: bool) -> None:
    result = behaviour(value, response)
    assert result.kind == "behaviour"
    assert result.passed is passed


def test_behaviour_detail_lists_every_key_outcome() -> None:
    result = behaviour(
        {"abstains": True, "neverCallsTool": ["apply_credit"], "maxSteps": 1},
        {"answer": "I don\u2019t know.", "toolCalls": [{"name": "apply_credit"}, {"name": "search"}]},
    )
    assert not result.passed
    parts = result.detail.split("; ")
    assert parts[0] == (
        'abstains=true holds: detected refusal phrase "i don\'t know" (default refusal list, 11 phrases)'
    )
    assert parts[1] == "neverCallsTool [apply_credit] FAILS: called: apply_credit"
    assert parts[2] == "maxSteps=1 FAILS: steps=2, counted from toolCalls (no steps field)"


BEHAVIOUR_DETAIL_CASES = [
    ("explicit-abstained", {"abstains": True}, {"answer": "x", "abstained": False}, "explicit field abstained=false"),
    ("empty-answer", {"abstains": True}, {"answer": ""}, "detected: the answer is empty"),
    ("no-refusal", {"abstains": True}, {"answer": "x"}, "no refusal phrase detected (default refusal list"),
    (
        "explicit-clarification",
        {"asksClarification": False},
        {"answer": "x", "askedClarification": True},
        "explicit field askedClarification=true",
    ),
    (
        "clarification-phrase",
        {"asksClarification": True},
        {"answer": "Do you mean 2024?"},
        'detected "?" and phrase "do you mean" (default clarification list, 6 phrases)',
    ),
    ("no-question-mark", {"asksClarification": True}, {"answer": "x"}, 'no "?" in the answer'),
    ("calls-missing", {"callsTool": ["a", "b"]}, {"answer": ""}, "not called: a, b (called: none)"),
    ("confirmation-absent", {"requiresConfirmation": True}, {"answer": ""}, "requestedConfirmation absent"),
    ("steps-field", {"maxSteps": 3}, {"answer": "", "steps": 2}, "maxSteps=3 holds: steps=2 from the steps field"),
]


@pytest.mark.parametrize(
    ("value", "response", "snippet"),
    [c[1:] for c in BEHAVIOUR_DETAIL_CASES],
    ids=[c[0] for c in BEHAVIOUR_DETAIL_CASES],
)
def test_behaviour_detail_texts(value: dict, response: dict, snippet: str) -> None:
    assert snippet in behaviour(value, response).detail


def test_configured_phrase_lists() -> None:
    config = DetectorConfig(refusal_phrases=["No IDEA"], clarification_phrases=("Pardon",))
    assert config.refusal_phrases == ("No IDEA",)  # lists become tuples: config stays hashable
    abstained = behaviour({"abstains": True}, {"answer": "No idea, sorry."}, config)
    assert abstained.passed
    assert "configured refusal list, 1 phrases" in abstained.detail
    # the defaults are replaced, not extended
    assert not behaviour({"abstains": True}, {"answer": "I don't know."}, config).passed
    assert behaviour({"asksClarification": True}, {"answer": "Pardon?"}, config).passed


def test_default_phrase_lists_are_the_spec_defaults() -> None:
    assert "i don't know" in DEFAULT_REFUSAL_PHRASES and len(DEFAULT_REFUSAL_PHRASES) == 11
    assert "which one" in DEFAULT_CLARIFICATION_PHRASES and len(DEFAULT_CLARIFICATION_PHRASES) == 6
    assert DetectorConfig() == DetectorConfig(DEFAULT_REFUSAL_PHRASES, DEFAULT_CLARIFICATION_PHRASES)


# --------------------------------------------------------------------------- case level

NORTHLINE = [
    {"kind": "must-contain", "value": "45", "why": "the term"},
    {"kind": "must-not-contain", "value": "30", "why": "superseded term"},
    {"kind": "must-cite", "documentId": "supply-agreement-northline-2026", "why": "provenance"},
    {"kind": "behaviour", "value": {"neverCallsTool": ["apply_credit"]}, "why": "read only"},
]
NORTHLINE_OK = {
    "answer": "Northline is on net 45 terms under the 2026 supply agreement.",
    "citations": ["supply-agreement-northline-2026"],
    "toolCalls": [{"name": "lookup_invoices", "arguments": {"customer": "northline"}}],
    "steps": 2,
    "abstained": False,
    "askedClarification": False,
    "requestedConfirmation": False,
    "retrieved": ["supply-agreement-northline-2026", "supply-agreement-northline-2024"],
    "model": "an unknown key is allowed",
}


def test_case_passes_only_when_every_expectation_passes() -> None:
    ok = score_case(NORTHLINE, NORTHLINE_OK)
    assert ok.passed and [r.passed for r in ok.results] == [True] * 4
    wrong = score_case(NORTHLINE, {**NORTHLINE_OK, "answer": "Northline is on net 30 terms."})
    assert not wrong.passed
    assert [r.kind for r in wrong.results] == ["must-contain", "must-not-contain", "must-cite", "behaviour"]
    assert [r.passed for r in wrong.results] == [False, False, True, True]


def test_case_without_expectations_passes() -> None:
    assert score_case([], {"answer": ""}) == CaseScore(True, False, ())


@pytest.mark.parametrize("invariant", [False, True], ids=["regular", "invariant"])
def test_invariant_is_flagged_and_scored_the_same(invariant: bool) -> None:
    score = score_case(NORTHLINE, NORTHLINE_OK, invariant=invariant)
    assert score.invariant is invariant
    assert score.results == score_case(NORTHLINE, NORTHLINE_OK).results
    line = score.to_dict("northline-terms")
    assert list(line) == ["caseId", "passed", "invariant", "results"]
    assert line["caseId"] == "northline-terms" and line["invariant"] is invariant
    assert list(line["results"][0]) == ["kind", "passed", "detail"]
    json.dumps(line)  # the score command prints it as one JSON line


def test_compiled_case_is_reusable_and_matches_score_case() -> None:
    compiled = compile_case(NORTHLINE)
    assert len(compiled) == 4
    for answer in ("net 45", "net 30", "", "I don't know"):
        response = {**NORTHLINE_OK, "answer": answer}
        assert compiled.score(response) == score_case(NORTHLINE, response)


def test_answer_normalised_once_per_response_and_only_when_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_case(
        [
            {"kind": "must-contain", "value": "45"},
            {"kind": "must-not-contain", "value": "30"},
            {"kind": "must-contain", "value": "net", "match": "fuzzy"},
            {"kind": "behaviour", "value": {"abstains": False, "asksClarification": False}},
        ]
    )
    lazy = compile_case([{"kind": "must-contain", "value": "45", "match": "exact"}, NORTHLINE[2]])
    calls: list[str] = []
    real = scoring.normalize
    monkeypatch.setattr(scoring, "normalize", lambda text: calls.append(text) or real(text))
    compiled.score({"answer": "Net 45?"})
    assert calls == ["Net 45?"]
    calls.clear()
    lazy.score({"answer": "Net 45?"})
    assert calls == []


# --------------------------------------------------------------------------- malformed responses

MALFORMED_CASES = [
    ("not-an-object", ["answer"], [("", "must be an object, not array")]),
    ("null", None, [("", "must be an object, not null")]),
    ("string", "net 45", [("", "must be an object, not string")]),
    ("answer-missing", {}, [("answer", "is required (a string, may be empty)")]),
    ("answer-null", {"answer": None}, [("answer", "must be a string, not null")]),
    ("answer-number", {"answer": 45}, [("answer", "must be a string, not integer")]),
    (
        "citations-string",
        {"answer": "", "citations": "doc"},
        [("citations", "must be an array of strings, not string")],
    ),
    ("citation-item", {"answer": "", "citations": ["a", 1]}, [("citations[1]", "must be a string, not integer")]),
    ("tool-calls-object", {"answer": "", "toolCalls": {}}, [("toolCalls", "must be an array, not object")]),
    ("tool-call-string", {"answer": "", "toolCalls": ["a"]}, [("toolCalls[0]", "must be an object, not string")]),
    (
        "tool-call-name-missing",
        {"answer": "", "toolCalls": [{"name": "a"}, {"arguments": {}}]},
        [("toolCalls[1].name", "is required")],
    ),
    (
        "tool-call-name-number",
        {"answer": "", "toolCalls": [{"name": 1}]},
        [("toolCalls[0].name", "must be a string, not integer")],
    ),
    ("steps-negative", {"answer": "", "steps": -1}, [("steps", "-1 is negative; it must be >= 0")]),
    ("steps-fraction", {"answer": "", "steps": 1.5}, [("steps", "must be an integer, not number")]),
    ("steps-nan", {"answer": "", "steps": float("nan")}, [("steps", "must be an integer, not number")]),
    ("steps-bool", {"answer": "", "steps": True}, [("steps", "must be an integer, not boolean")]),
    ("steps-string", {"answer": "", "steps": "2"}, [("steps", "must be an integer, not string")]),
    ("abstained-string", {"answer": "", "abstained": "yes"}, [("abstained", "must be true or false, not string")]),
    (
        "asked-null",
        {"answer": "", "askedClarification": None},
        [("askedClarification", "must be true or false, not null")],
    ),
    (
        "confirmation-number",
        {"answer": "", "requestedConfirmation": 1},
        [("requestedConfirmation", "must be true or false, not integer")],
    ),
    ("retrieved-item", {"answer": "", "retrieved": [None]}, [("retrieved[0]", "must be a string, not null")]),
    (
        "every-problem-reported",
        {"citations": [1], "toolCalls": [{}], "steps": -2, "abstained": 0},
        [
            ("answer", "is required (a string, may be empty)"),
            ("citations[0]", "must be a string, not integer"),
            ("toolCalls[0].name", "is required"),
            ("steps", "-2 is negative; it must be >= 0"),
            ("abstained", "must be true or false, not integer"),
        ],
    ),
]


@pytest.mark.parametrize(("response", "errors"), [c[1:] for c in MALFORMED_CASES], ids=[c[0] for c in MALFORMED_CASES])
def test_malformed_response(response: object, errors: list[tuple[str, str]]) -> None:
    assert check_response(response) == errors
    with pytest.raises(ResponseError) as raised:
        score_case(NORTHLINE, response)  # type: ignore[arg-type]
    assert raised.value.errors == errors
    assert isinstance(raised.value, ValueError)
    assert errors[0][1] in str(raised.value)


def test_well_formed_responses_have_no_problems() -> None:
    assert check_response(NORTHLINE_OK) == []
    assert check_response({"answer": ""}) == []


# --------------------------------------------------------------------------- malformed expectations

BAD_EXPECTATIONS = [
    ("unknown-kind", {"kind": "must-include", "value": "x"}, "expectations[0].kind"),
    ("unknown-key", {"kind": "must-contain", "value": "x", "treshold": 80}, "treshold"),
    ("bad-match", {"kind": "must-contain", "value": "x", "match": "regex"}, "expectations[0].match"),
    ("empty-value", {"kind": "must-contain", "value": ""}, "expectations[0].value"),
    ("empty-behaviour", {"kind": "behaviour", "value": {}}, "expectations[0].value"),
    ("unknown-behaviour-key", {"kind": "behaviour", "value": {"abstain": True}}, "abstain"),
    ("bad-max-steps", {"kind": "behaviour", "value": {"maxSteps": -1}}, "maxSteps"),
    ("bad-document-id", {"kind": "must-cite", "documentId": 3}, "documentId"),
]


@pytest.mark.parametrize(("exp", "where"), [c[1:] for c in BAD_EXPECTATIONS], ids=[c[0] for c in BAD_EXPECTATIONS])
def test_malformed_expectation_is_a_value_error_naming_the_key(exp: dict, where: str) -> None:
    with pytest.raises(ValueError, match=where.replace("[", r"\[").replace("]", r"\]")):
        compile_case([exp])


def test_results_are_frozen_values() -> None:
    score = score_case(NORTHLINE, NORTHLINE_OK)
    with pytest.raises(dataclasses.FrozenInstanceError):
        score.passed = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        score.results[0].detail = "edited"  # type: ignore[misc]
    first = score.results[0]
    assert first == ExpectationResult(first.kind, first.passed, first.detail)
    assert hash(score) == hash(CaseScore(score.passed, score.invariant, score.results))


def test_detector_config_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError, match="refusal_phrases"):
        DetectorConfig(refusal_phrases="i don't know")  # type: ignore[arg-type]
