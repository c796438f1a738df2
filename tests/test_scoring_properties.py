"""Property-based (metamorphic) tests of the scoring engine.

These state relations between inputs and verdicts that must hold whatever the
implementation, instead of re-deriving expected values the way the code does.
"""

from __future__ import annotations

import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from cases.scoring import (
    CaseScore,
    ResponseError,
    check_response,
    compile_case,
    normalize,
    score_case,
)

MODEST = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])

# Any Unicode text, including lone surrogates (JSON can carry them as "\ud800").
any_text = st.text(st.characters(exclude_categories=()), max_size=80) | st.text(max_size=80)


@MODEST
@given(any_text)
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@MODEST
@given(any_text)
def test_normalize_leaves_no_whitespace_runs_or_edges(text: str) -> None:
    out = normalize(text)
    assert out == out.strip()
    assert "  " not in out
    assert all(not ch.isspace() or ch == " " for ch in out)


# --------------------------------------------------------------------------- placement

# Letters and digits of any script. A value is built from them and single inner
# spaces, so it starts and ends with a letter or digit.
alnum_char = st.characters(categories=("Lu", "Ll", "Lo", "Nd"))
word = st.text(alnum_char, min_size=1, max_size=8)
value_strategy = st.lists(word, min_size=1, max_size=4).map(" ".join)


@MODEST
@given(prefix=any_text, value=value_strategy, suffix=any_text)
def test_value_between_spaces_is_found(prefix: str, value: str, suffix: str) -> None:
    answer = f"{prefix} {value} {suffix}"
    result = score_case([{"kind": "must-contain", "value": value}], {"answer": answer}).results[0]
    assert result.passed, result.detail


@MODEST
@given(prefix=any_text, value=value_strategy, suffix=any_text, mode=st.sampled_from(["normalized", "exact", "fuzzy"]))
def test_must_not_contain_is_the_complement_of_must_contain(prefix: str, value: str, suffix: str, mode: str) -> None:
    response = {"answer": prefix + value + suffix}
    pos = score_case([{"kind": "must-contain", "value": value, "match": mode}], response).results[0]
    neg = score_case([{"kind": "must-not-contain", "value": value, "match": mode}], response).results[0]
    assert pos.passed is not neg.passed


@MODEST
@given(prefix=any_text, value=st.text(min_size=1, max_size=20).filter(str.strip), suffix=any_text)
def test_exact_value_inside_answer_is_found(prefix: str, value: str, suffix: str) -> None:
    exp = {"kind": "must-contain", "value": value, "match": "exact"}
    assert score_case([exp], {"answer": prefix + value + suffix}).passed


# --------------------------------------------------------------------------- invariance under surface changes

# The safe alphabet is ASCII letters, digits, ASCII punctuation and the space: on
# it, swapping case never changes casefold(), and the typographic replacements
# below are exactly undone by N. Beyond ASCII that is false in general (e.g.
# "ß".swapcase() is "SS", "İ" casefolds to two characters, and a combining mark
# after a replaced quote changes NFKC composition), so the property is stated
# only where it is true.
SAFE = string.ascii_letters + string.digits + string.punctuation + " "
safe_text = st.text(st.sampled_from(SAFE), max_size=60)
safe_value = st.text(st.sampled_from(SAFE), min_size=1, max_size=12).filter(lambda v: v.strip())

CURLY_SINGLE = ["\u2018", "\u2019", "\u201a", "\u201b", "\u2032"]
CURLY_DOUBLE = ["\u201c", "\u201d", "\u201e", "\u2033"]
DASHES = ["\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212"]
SPACE_RUNS = [" ", "  ", "\t", "\n", " \n\t ", "\u00a0", "\u202f", "\u2003", "\u3000", " \u200b "]


@st.composite
def surface_variant(draw: st.DrawFn, text: str) -> str:
    """The same text with case, quote style, dash style and spacing redrawn."""
    out = []
    for ch in text:
        if ch.isalpha() and draw(st.booleans()):
            ch = ch.swapcase()
        elif ch == "'":
            ch = draw(st.sampled_from(["'", *CURLY_SINGLE]))
        elif ch == '"':
            ch = draw(st.sampled_from(['"', *CURLY_DOUBLE]))
        elif ch == "-":
            ch = draw(st.sampled_from(["-", *DASHES]))
        elif ch == " ":
            ch = draw(st.sampled_from(SPACE_RUNS))
        out.append(ch)
    return "".join(out)


@MODEST
@given(data=st.data(), answer=safe_text, value=safe_value, kind=st.sampled_from(["must-contain", "must-not-contain"]))
def test_normalized_verdict_ignores_case_quotes_dashes_and_spacing(
    data: st.DataObject, answer: str, value: str, kind: str
) -> None:
    # Let the value occur in half the draws, so both verdicts are exercised.
    if data.draw(st.booleans()):
        answer = answer[: len(answer) // 2] + value + answer[len(answer) // 2 :]
    variant = data.draw(surface_variant(answer))
    compiled = compile_case([{"kind": kind, "value": value}])
    assert compiled.score({"answer": variant}).passed is compiled.score({"answer": answer}).passed


@MODEST
@given(data=st.data(), text=safe_text)
def test_normalize_undoes_surface_changes(data: st.DataObject, text: str) -> None:
    assert normalize(data.draw(surface_variant(text))) == normalize(text)


# --------------------------------------------------------------------------- never raises

json_scalar = st.none() | st.booleans() | st.integers() | st.floats() | any_text
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
# The validator refuses blank values, tool names and document ids (they would assert nothing).
non_blank = st.text(min_size=1, max_size=20).filter(str.strip)
names = st.text(min_size=1, max_size=12).filter(str.strip)

# Responses exactly as the schema allows them: `answer` required, the rest optional,
# unknown keys allowed.
tool_call = st.fixed_dictionaries({"name": st.text(max_size=12)}, optional={"arguments": json_value})
valid_response = st.fixed_dictionaries(
    {"answer": any_text},
    optional={
        "citations": st.lists(any_text, max_size=4),
        "toolCalls": st.lists(tool_call, max_size=4),
        "steps": st.integers(min_value=0, max_value=10**6),
        "abstained": st.booleans(),
        "askedClarification": st.booleans(),
        "requestedConfirmation": st.booleans(),
        "retrieved": st.lists(st.text(max_size=12), max_size=3),
        "model": json_value,
    },
)


@st.composite
def text_expectation(draw: st.DrawFn) -> dict:
    exp = {
        "kind": draw(st.sampled_from(["must-contain", "must-not-contain"])),
        "value": draw(non_blank),
    }
    match = draw(st.sampled_from([None, "normalized", "exact", "fuzzy"]))
    if match is not None:
        exp["match"] = match
    if match == "fuzzy" and draw(st.booleans()):
        exp["threshold"] = draw(st.integers(50, 100))
    if draw(st.booleans()):
        exp["why"] = "because"
    return exp


cite_expectation = st.fixed_dictionaries({"kind": st.just("must-cite"), "documentId": non_blank})
behaviour_value = st.fixed_dictionaries(
    {},
    optional={
        "abstains": st.booleans(),
        "asksClarification": st.booleans(),
        "callsTool": st.lists(names, max_size=3),
        "neverCallsTool": st.lists(names, max_size=3),
        "requiresConfirmation": st.booleans(),
        "maxSteps": st.integers(min_value=0, max_value=20),
    },
).filter(bool)
behaviour_expectation = st.fixed_dictionaries({"kind": st.just("behaviour"), "value": behaviour_value})
expectation = text_expectation() | cite_expectation | behaviour_expectation


@MODEST
@given(expectations=st.lists(expectation, max_size=5), response=valid_response, invariant=st.booleans())
def test_scoring_a_schema_valid_response_never_raises(expectations: list, response: dict, invariant: bool) -> None:
    score = score_case(expectations, response, invariant=invariant)
    assert isinstance(score, CaseScore)
    assert len(score.results) == len(expectations)
    assert [r.kind for r in score.results] == [e["kind"] for e in expectations]
    assert score.passed is all(r.passed for r in score.results)
    assert score.invariant is invariant
    assert all(isinstance(r.detail, str) and r.detail for r in score.results)
    # The invariant flag is reported, never scored differently.
    assert score_case(expectations, response, invariant=not invariant).results == score.results
    json.dumps(score.to_dict("case-1"))


RESPONSE_KEYS = [
    "answer",
    "citations",
    "toolCalls",
    "steps",
    "abstained",
    "askedClarification",
    "requestedConfirmation",
    "retrieved",
]
# Schema-valid responses with some keys overwritten by any JSON value, plus any JSON at all.
mangled_response = st.builds(
    lambda base, junk: {**base, **junk},
    valid_response,
    st.dictionaries(st.sampled_from(RESPONSE_KEYS), json_value, max_size=3),
)


@MODEST
@given(response=json_value | valid_response | mangled_response)
def test_arbitrary_input_is_scored_or_a_response_error(response: object) -> None:
    compiled = compile_case(
        [
            {"kind": "must-contain", "value": "45"},
            {"kind": "must-cite", "documentId": "doc"},
            {"kind": "behaviour", "value": {"abstains": False, "callsTool": ["a"], "maxSteps": 2}},
        ]
    )
    problems = check_response(response)
    try:
        compiled.score(response)  # type: ignore[arg-type]
    except ResponseError as err:
        assert err.errors == problems and problems
    else:
        assert problems == []


# --------------------------------------------------------------------------- fuzzy oracle

# The engine takes the score from partial_ratio_alignment (one pass gives score and
# location). The spec names partial_ratio, so check against it directly, with short
# and long (> 64 chars, another code path in rapidfuzz) values over a small alphabet
# so that near matches are common.
fuzzy_text = st.text(st.sampled_from("abcde -"), max_size=150)


@MODEST
@given(value=fuzzy_text.filter(str.strip), answer=fuzzy_text, threshold=st.integers(50, 100))
def test_fuzzy_verdict_is_partial_ratio_at_threshold(value: str, answer: str, threshold: int) -> None:
    exp = {"kind": "must-contain", "value": value, "match": "fuzzy", "threshold": threshold}
    result = score_case([exp], {"answer": answer}).results[0]
    assert result.passed is (fuzz.partial_ratio(normalize(value), normalize(answer)) >= threshold)
