"""Table-driven tests of cases.relaxation: every rule, its mirror, and the neutral cases.

No database: run with ``-p no:django --noconftest``. Where a classification claims
more than "cannot prove harmless" (tightening or neutral), the soundness tests check
the claim against the real scoring engine on a corpus of responses; where a judgement
call says "relaxing" although it looks like tightening, a witness response shows why.
"""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from cases.relaxation import (
    NEUTRAL,
    RELAXING,
    TIGHTENING,
    Change,
    classify_expectation_change,
    classify_override,
    classify_retirement,
    diff_contents,
    is_relaxing,
    override_change,
    retirement_change,
)
from cases.scoring import score_case

R, T, N = RELAXING, TIGHTENING, NEUTRAL


def mc(value, why="the term itself", **extra):
    return {"kind": "must-contain", "value": value, "why": why, **extra}


def mnc(value, why="the superseded term", **extra):
    return {"kind": "must-not-contain", "value": value, "why": why, **extra}


def cite(doc, why="provenance"):
    return {"kind": "must-cite", "documentId": doc, "why": why}


def beh(why="out of scope", **value):
    return {"kind": "behaviour", "value": value, "why": why}


def row(id_, before, after, classification, words=(), absent=(), *, scorable=True):
    return pytest.param(before, after, classification, tuple(words), tuple(absent), scorable, id=id_)


FUZZY = {"match": "fuzzy"}
EXACT = {"match": "exact"}

MUST_CONTAIN = [
    row(
        "mc-shortened-to-substring",
        mc("net 45 days"),
        mc("45"),
        R,
        ["shortened", "substring", '"net 45 days"', '"45"', "more answers"],
    ),
    row("mc-extended", mc("45"), mc("net 45 days"), T, ["extended", '"45"', '"net 45 days"']),
    row("mc-extended-inside-a-token", mc("45"), mc("450"), R, ["whole token", "cannot prove"]),
    row("mc-unrelated-value", mc("45"), mc("sixty"), R, ["unrelated", "cannot prove"]),
    row("mc-case-and-spacing-only", mc("Net 45"), mc("net  45"), N, ["same meaning"]),
    row("mc-exact-shortened", mc("net 45 days", **EXACT), mc("45", **EXACT), R, ["shortened", "substring"]),
    row("mc-exact-extended", mc("45", **EXACT), mc("450", **EXACT), T, ["extended"]),
    row("mc-exact-case-changed", mc("Net 45", **EXACT), mc("net 45", **EXACT), R, ["case", "cannot prove"]),
    row("mc-normalized-to-fuzzy-looser", mc("45"), mc("45", **FUZZY), R, ["looser", "normalized", "fuzzy"]),
    row("mc-fuzzy-to-normalized-stricter", mc("45", **FUZZY), mc("45"), T, ["stricter", "fuzzy"]),
    row("mc-exact-to-fuzzy-looser", mc("net 45", **EXACT), mc("net 45", **FUZZY), R, ["looser"]),
    row("mc-fuzzy-to-exact-stricter", mc("net 45", **FUZZY), mc("net 45", **EXACT), T, ["stricter"]),
    row("mc-exact-to-normalized", mc("45", **EXACT), mc("45"), R, ["neither is stricter", "cannot prove"]),
    row("mc-normalized-to-exact", mc("45"), mc("45", **EXACT), R, ["token boundaries", "cannot prove"]),
    row(
        "mc-threshold-lowered",
        mc("early payment discount", **FUZZY),
        mc("early payment discount", match="fuzzy", threshold=80),
        R,
        ["threshold lowered", "90", "80", "looser"],
    ),
    row(
        "mc-threshold-raised",
        mc("early payment discount", match="fuzzy", threshold=80),
        mc("early payment discount", match="fuzzy", threshold=95),
        T,
        ["threshold raised", "80", "95", "stricter"],
    ),
    row(
        "mc-threshold-default-written-out",
        mc("early payment discount", **FUZZY),
        mc("early payment discount", match="fuzzy", threshold=90),
        N,
        ["default", "same meaning"],
    ),
    row("mc-match-default-written-out", mc("45"), mc("45", match="normalized"), N, ["default", "same meaning"]),
    row("mc-why-only", mc("45", why="the term"), mc("45", why="the 2026 term"), N, ["only the why changed"]),
    row(
        "mc-default-written-out-and-why",
        mc("45", why="a"),
        mc("45", why="b", match="normalized"),
        N,
        ["default", "why changed too"],
    ),
    row("mc-fuzzy-case-only", mc("Early Payment", **FUZZY), mc("early payment", **FUZZY), N, ["same meaning"]),
    row(
        "mc-fuzzy-extended-not-monotone",
        mc("net 45", **FUZZY),
        mc("net 45 days", **FUZZY),
        R,
        ["not monotone", "cannot prove"],
    ),
    row("mc-fuzzy-shortened", mc("net 45 days", **FUZZY), mc("45", **FUZZY), R, ["shortened"]),
    row(
        "mc-mode-and-value-both-tighten",
        mc("45", **FUZZY),
        mc("net 45 days"),
        T,
        ["stricter", "extended"],
    ),
    row(
        "mc-stricter-mode-but-shortened",
        mc("net 45 days", **FUZZY),
        mc("45"),
        R,
        ["shortened", "substring"],
        ["stricter"],
    ),
    row("mc-looser-mode-but-extended", mc("45"), mc("net 45 days", **FUZZY), R, ["looser"], ["extended"]),
    row(
        "mc-threshold-raised-but-shortened",
        mc("net 45 days", match="fuzzy", threshold=80),
        mc("45", match="fuzzy", threshold=95),
        R,
        ["shortened"],
        ["raised"],
    ),
    row("mc-malformed-value", mc(45), mc(46), R, ["cannot prove"], scorable=False),
]

MUST_NOT_CONTAIN = [
    row("mnc-made-longer", mnc("30"), mnc("30 days"), R, ["made longer", "matches less", "fewer answers are rejected"]),
    row("mnc-shortened", mnc("30 days"), mnc("30"), T, ["shortened", "substring", "more are rejected"]),
    row("mnc-shortened-inside-a-token", mnc("2030"), mnc("30"), R, ["whole token", "cannot prove"]),
    row("mnc-unrelated-value", mnc("30"), mnc("sixty"), R, ["unrelated"]),
    row("mnc-normalized-to-exact", mnc("30"), mnc("30", **EXACT), R, ["neither is stricter"]),
    row("mnc-exact-to-normalized", mnc("30", **EXACT), mnc("30"), R, ["neither is stricter", "cannot prove"]),
    row(
        "mnc-fuzzy-to-normalized-stricter",
        mnc("30 days", **FUZZY),
        mnc("30 days"),
        R,
        ["stricter", "fewer answers are rejected"],
    ),
    row(
        "mnc-normalized-to-fuzzy-looser",
        mnc("30 days"),
        mnc("30 days", **FUZZY),
        T,
        ["looser", "more answers are rejected"],
    ),
    row("mnc-fuzzy-to-exact-stricter", mnc("30 days", **FUZZY), mnc("30 days", **EXACT), R, ["stricter"]),
    row("mnc-exact-to-fuzzy-looser", mnc("30 days", **EXACT), mnc("30 days", **FUZZY), T, ["looser"]),
    row(
        "mnc-threshold-raised",
        mnc("30 days", **FUZZY),
        mnc("30 days", match="fuzzy", threshold=95),
        R,
        ["threshold raised", "fewer answers are rejected"],
    ),
    row(
        "mnc-threshold-lowered",
        mnc("30 days", match="fuzzy", threshold=95),
        mnc("30 days", **FUZZY),
        T,
        ["threshold lowered", "more answers are rejected"],
    ),
    row("mnc-why-only", mnc("30", why="old"), mnc("30", why="the 2024 term"), N, ["only the why changed"]),
    row("mnc-match-default-written-out", mnc("30", match="normalized"), mnc("30"), N, ["default"]),
    row("mnc-fuzzy-value-changed", mnc("30 days", **FUZZY), mnc("30 day", **FUZZY), R, ["not monotone"]),
]

MUST_CITE = [
    row("cite-changed", cite("agreement-2026"), cite("agreement-2024"), R, ["cited document changed", "2024"]),
    row("cite-whitespace-only", cite("agreement-2026"), cite(" agreement-2026 "), N, ["whitespace"]),
    row("cite-why-only", cite("agreement-2026", why="a"), cite("agreement-2026", why="b"), N, ["only the why"]),
]

BOOL_KEYS = ("abstains", "asksClarification", "requiresConfirmation")
BEHAVIOUR_BOOLS = [
    item
    for key in BOOL_KEYS
    for item in (
        row(f"beh-{key}-removed", beh(**{key: True}, maxSteps=3), beh(maxSteps=3), R, [key, "removed"]),
        row(f"beh-{key}-added", beh(maxSteps=3), beh(**{key: True}, maxSteps=3), T, [key, "added"]),
        row(f"beh-{key}-false-removed", beh(**{key: False}, maxSteps=3), beh(maxSteps=3), R, [key, "removed"]),
        row(f"beh-{key}-flipped-true-to-false", beh(**{key: True}), beh(**{key: False}), R, [key, "flipped"]),
        row(f"beh-{key}-flipped-false-to-true", beh(**{key: False}), beh(**{key: True}), R, [key, "flipped"]),
    )
]

BEHAVIOUR_OTHER = [
    row("beh-callsTool-dropped", beh(callsTool=["a", "b"]), beh(callsTool=["a"]), R, ["callsTool", "dropped", "b"]),
    row("beh-callsTool-added", beh(callsTool=["a"]), beh(callsTool=["a", "b"]), T, ["callsTool", "added", "b"]),
    row("beh-callsTool-reordered", beh(callsTool=["a", "b"]), beh(callsTool=["b", "a"]), N, ["same set"]),
    row(
        "beh-callsTool-key-removed",
        beh(callsTool=["a"], maxSteps=3),
        beh(maxSteps=3),
        R,
        ["callsTool", "dropped", "key removed"],
    ),
    row("beh-callsTool-key-added", beh(maxSteps=3), beh(callsTool=["a"], maxSteps=3), T, ["callsTool", "added"]),
    row("beh-neverCallsTool-dropped", beh(neverCallsTool=["x", "y"]), beh(neverCallsTool=["x"]), R, ["dropped", "y"]),
    row("beh-neverCallsTool-added", beh(neverCallsTool=["x"]), beh(neverCallsTool=["x", "y"]), T, ["added", "y"]),
    row(
        "beh-neverCallsTool-key-removed",
        beh(neverCallsTool=["x"], abstains=True),
        beh(abstains=True),
        R,
        ["neverCallsTool", "dropped"],
    ),
    row("beh-maxSteps-raised", beh(maxSteps=3), beh(maxSteps=5), R, ["maxSteps raised", "3", "5"]),
    row("beh-maxSteps-lowered", beh(maxSteps=5), beh(maxSteps=3), T, ["maxSteps lowered"]),
    row("beh-maxSteps-removed", beh(maxSteps=3, abstains=False), beh(abstains=False), R, ["maxSteps", "removed"]),
    row("beh-maxSteps-added", beh(abstains=False), beh(maxSteps=3, abstains=False), T, ["maxSteps", "added"]),
    row("beh-maxSteps-same-number", beh(maxSteps=3), beh(maxSteps=3.0), N),
    row(
        "beh-mixed-tool-added-steps-raised",
        beh(callsTool=["a"], maxSteps=3),
        beh(callsTool=["a", "b"], maxSteps=5),
        R,
        ["maxSteps raised"],
        ["entries added"],
    ),
    row(
        "beh-mixed-flip-and-tool-added",
        beh(abstains=True, neverCallsTool=["x"]),
        beh(abstains=False, neverCallsTool=["x", "y"]),
        R,
        ["flipped"],
        ["entries added"],
    ),
    row(
        "beh-two-tightenings",
        beh(neverCallsTool=["x"], maxSteps=5),
        beh(neverCallsTool=["x", "y"], maxSteps=3),
        T,
        ["neverCallsTool entries added", "maxSteps lowered"],
    ),
    row("beh-why-only", beh(why="a", abstains=True), beh(why="b", abstains=True), N, ["only the why"]),
    row("beh-unknown-key", beh(abstains=True), beh(abstains=True, politely=True), R, ["unknown key"], scorable=False),
]

KIND_CHANGES = [
    row("kind-contain-to-cite", mc("45"), cite("agreement-2026"), R, ["kind changed", "must-contain", "must-cite"]),
    row("kind-contain-to-not-contain", mc("45"), mnc("45"), R, ["kind changed"]),
    row("kind-not-contain-to-contain", mnc("30"), mc("30"), R, ["kind changed"]),
    row("kind-cite-to-behaviour", cite("d"), beh(callsTool=["a"]), R, ["kind changed"]),
]

ADDED_REMOVED = [
    row("added-must-contain", None, mc("45"), T, ["must-contain", '"45"', "added"]),
    row("added-must-not-contain", None, mnc("30"), T, ["must-not-contain", "added"]),
    row("added-must-cite", None, cite("agreement-2026"), T, ["must-cite", "added"]),
    row("added-behaviour", None, beh(abstains=True, neverCallsTool=["apply_credit"]), T, ["behaviour", "added"]),
    row("removed-must-contain", mc("45"), None, R, ["must-contain", '"45"', "removed", "no longer need to contain"]),
    row("removed-must-not-contain", mnc("30"), None, R, ["removed", "no longer rejected"]),
    row("removed-must-cite", cite("agreement-2026"), None, R, ["removed", "agreement-2026", "cite"]),
    row("removed-behaviour", beh(abstains=True), None, R, ["removed", "abstains=true"]),
    row("unchanged", mc("45"), mc("45"), N, ["no change"]),
]

ALL_ROWS = (
    MUST_CONTAIN + MUST_NOT_CONTAIN + MUST_CITE + BEHAVIOUR_BOOLS + BEHAVIOUR_OTHER + KIND_CHANGES + ADDED_REMOVED
)


@pytest.mark.parametrize(("before", "after", "expected", "words", "absent", "scorable"), ALL_ROWS)
def test_classify_expectation_change(before, after, expected, words, absent, scorable):
    classification, reason = classify_expectation_change(before, after)
    assert classification == expected, reason
    for word in words:
        assert word in reason, f"{word!r} not in {reason!r}"
    for word in absent:
        assert word not in reason, f"{word!r} unexpectedly in {reason!r}"


# --------------------------------------------------------------------------- soundness against the scorer

ANSWERS = [
    "",
    "45",
    "net 45",
    "Net 45",
    "NET 45 DAYS",
    "net 45 days",
    "net  45  days",
    "Northline is on net 45 days under the 2026 agreement.",
    "45-day terms (45)",
    "450 days",
    "net 450",
    "net 46 days",
    "net 4 days",
    "the 2024 term was 30 days",
    "30 day terms",
    "30",
    "in 2030",
    "sixty",
    "early payment discount",
    "Early-payment discount",
    "early paymnt discount",
    "an early pay discount",
    "late payment",
]
CITATIONS = [[], ["agreement-2026"], ["agreement-2024"], ["agreement-2026", "agreement-2024"], ["d"]]
TOOL_SETS = [list(c) for n in range(4) for c in itertools.combinations(["a", "b", "x", "y"], n)]


def responses_for(kind):
    if kind in ("must-contain", "must-not-contain"):
        return [{"answer": a} for a in ANSWERS]
    if kind == "must-cite":
        return [{"answer": "see the agreement", "citations": c} for c in CITATIONS]
    return [
        {
            "answer": "ok",
            "abstained": abstained,
            "askedClarification": asked,
            "requestedConfirmation": confirm,
            "toolCalls": [{"name": t, "arguments": {}} for t in tools],
            "steps": steps,
        }
        for abstained, asked, confirm, tools, steps in itertools.product(
            (True, False), (True, False), (True, False), TOOL_SETS, (1, 3, 4, 5, 6)
        )
    ]


def passes(exp, response):
    return score_case([exp], response).passed


SOUND_ROWS = [
    p for p in ALL_ROWS if p.values[0] is not None and p.values[1] is not None and p.values[2] in (T, N) and p.values[5]
]


@pytest.mark.parametrize(("before", "after", "expected", "words", "absent", "scorable"), SOUND_ROWS)
def test_tightening_and_neutral_claims_hold_for_the_scorer(before, after, expected, words, absent, scorable):
    """Tightening: whatever passes after passed before. Neutral: the same answers pass."""
    for response in responses_for(before["kind"]):
        was, now = passes(before, response), passes(after, response)
        if expected == T:
            assert was or not now, f"{response} passes after but failed before"
        else:
            assert was == now, f"{response}: before {was}, after {now}"


SWEEP_VALUES = ["45", "Net 45", "net 45 days", "450", "45-day", "30", "2030", "early payment"]
SWEEP_MATCHERS = [{}, EXACT, FUZZY, {"match": "fuzzy", "threshold": 70}]
SWEEP_BEHAVIOURS = [
    {k: v for k, v in zip(("abstains", "callsTool", "neverCallsTool", "maxSteps"), combo, strict=True) if v is not None}
    for combo in itertools.product((None, True, False), (None, ["a"], ["a", "b"]), (None, ["x"]), (None, 3, 5))
]


def sweep_groups():
    for kind in ("must-contain", "must-not-contain"):
        yield kind, [{"kind": kind, "value": v, **m} for v in SWEEP_VALUES for m in SWEEP_MATCHERS]
    yield "behaviour", [{"kind": "behaviour", "value": v} for v in SWEEP_BEHAVIOURS if v]


def test_sweep_every_tightening_or_neutral_claim_holds():
    """All pairs over small grids of values/modes/keys: no unsound tightening or neutral."""
    claims = 0
    for kind, exps in sweep_groups():
        responses = responses_for(kind)
        verdicts = [[passes(exp, response) for response in responses] for exp in exps]
        for (i, before), (j, after) in itertools.product(enumerate(exps), repeat=2):
            classification, reason = classify_expectation_change(before, after)
            if classification == R:
                continue
            claims += 1
            for response, was, now in zip(responses, verdicts[i], verdicts[j], strict=True):
                ok = (was or not now) if classification == T else was == now
                assert ok, (before, after, response, reason)
    assert claims > 300


WITNESSES = [
    pytest.param(mc("45"), mc("45", **EXACT), "450 days", id="normalized-to-exact-accepts-450"),
    pytest.param(mnc("30", **EXACT), mnc("30"), "in 2030", id="mnc-exact-to-normalized-accepts-2030"),
    pytest.param(mc("net 45", **FUZZY), mc("net 45 days", **FUZZY), "45 days", id="fuzzy-longer-accepts-45-days"),
    pytest.param(mc("45"), mc("450"), "net 450", id="extended-inside-token-accepts-450"),
    pytest.param(mnc("2030"), mnc("30"), "in 2030", id="mnc-shortened-inside-token-accepts-2030"),
    pytest.param(mc("Net 45", **EXACT), mc("net 45", **EXACT), "net 45", id="exact-case-change-accepts-lowercase"),
]


@pytest.mark.parametrize(("before", "after", "answer"), WITNESSES)
def test_judgement_calls_have_a_witness(before, after, answer):
    """Each "looks tighter but is relaxing" call: an answer the old version failed now passes."""
    assert classify_expectation_change(before, after)[0] == R
    response = {"answer": answer}
    assert not passes(before, response)
    assert passes(after, response)


# --------------------------------------------------------------------------- retirement, override, is_relaxing


def test_retirement_is_relaxing():
    classification, reason = classify_retirement()
    assert classification == R
    assert "retired" in reason
    change = retirement_change("accepted")
    assert (change.path, change.action, change.before, change.after) == ("status", "retired", "accepted", "retired")
    assert change.classification == R


@pytest.mark.parametrize(
    ("item", "reason", "expected"),
    [
        pytest.param(2, "target was down all week", "automatic checklist item 2 overridden: target was down all week"),
        pytest.param(3, "  two\nphrasings  ", "automatic checklist item 3 overridden: two phrasings", id="whitespace"),
        pytest.param(5, "", "automatic checklist item 5 overridden: (no reason given)", id="empty-reason"),
    ],
)
def test_override_is_relaxing(item, reason, expected):
    assert classify_override(item, reason) == (R, expected)
    change = override_change(item, reason)
    assert (change.path, change.action, change.classification) == (f"checklist[{item}]", "override", R)
    assert change.reason == expected


def _change(classification):
    return Change("tags", "tags-changed", [], [], classification, "r", None)


@pytest.mark.parametrize(
    ("classifications", "expected"),
    [
        pytest.param([], False, id="no-changes"),
        pytest.param([N, T], False, id="neutral-and-tightening"),
        pytest.param([T, R, N], True, id="one-relaxing"),
    ],
)
def test_is_relaxing(classifications, expected):
    assert is_relaxing([_change(c) for c in classifications]) is expected
    assert is_relaxing(_change(c) for c in classifications) is expected


# --------------------------------------------------------------------------- diff_contents


def case(expectations, tags=("terms",), invariant=False, **extra):
    return {
        "id": "northline-terms",
        "question": "What are Northline's payment terms?",
        "tags": list(tags),
        "expectations": list(expectations),
        "invariant": invariant,
        **extra,
    }


def summary(changes):
    return [(c.path, c.action, c.classification) for c in changes]


DIFFS = [
    pytest.param(
        case([mc("45"), cite("agreement-2026")]),
        case([mc("45"), cite("agreement-2026")]),
        [],
        id="identical",
    ),
    pytest.param(
        case([mc("45"), cite("agreement-2026"), beh(abstains=False)]),
        case([beh(abstains=False), mc("45"), cite("agreement-2026")]),
        [],
        id="reordered-expectations",
    ),
    pytest.param(
        case([mc("45", why="a"), mc("45", why="b")]),
        case([mc("45", why="b"), mc("45", why="a")]),
        [],
        id="reordered-duplicates-keep-their-whys",
    ),
    pytest.param(
        case([mc("45", why="a"), cite("agreement-2026")]),
        case([cite("agreement-2026"), mc("45", why="b")]),
        [("expectations[1]", "expectation-modified", N)],
        id="reordered-and-why-changed",
    ),
    pytest.param(
        case([mc("net 45 days"), cite("agreement-2026")]),
        case([cite("agreement-2026"), mc("45")]),
        [("expectations[1]", "expectation-modified", R)],
        id="moved-and-shortened-is-modified",
    ),
    pytest.param(
        case([mc("alpha"), mc("net 45")]),
        case([mc("net 45 days"), mc("alpha beta")]),
        [("expectations[0]", "expectation-modified", T), ("expectations[1]", "expectation-modified", T)],
        id="containment-beats-position",
    ),
    pytest.param(
        case([mc("45")]),
        case([mc("sixty")]),
        [("expectations[0]", "expectation-modified", R)],
        id="unrelated-replacement-is-modified-relaxing",
    ),
    pytest.param(
        case([mc("45")]),
        case([cite("agreement-2026")]),
        [("expectations[0]", "expectation-added", T), ("expectations[0]", "expectation-removed", R)],
        id="kind-change-is-removed-plus-added",
    ),
    pytest.param(
        case([mc("45"), mnc("30")]),
        case([mc("45")]),
        [("expectations[1]", "expectation-removed", R)],
        id="removed",
    ),
    pytest.param(
        case([mc("45"), mc("45")]),
        case([mc("45")]),
        [("expectations[1]", "expectation-removed", R)],
        id="duplicate-removed",
    ),
    pytest.param(
        case([mc("45")]),
        case([mnc("30"), mc("45")]),
        [("expectations[0]", "expectation-added", T)],
        id="added-in-front",
    ),
    pytest.param(
        case([mc("45"), mc("net 45 days")]),
        case([mc("net 45 days and no discount")]),
        [("expectations[0]", "expectation-modified", T), ("expectations[0]", "expectation-removed", R)],
        id="two-become-one-pairs-the-closest",
    ),
    pytest.param(
        case([beh(abstains=True), beh(callsTool=["a"])]),
        case([beh(callsTool=["a", "b"]), beh(abstains=True, maxSteps=3)]),
        [("expectations[0]", "expectation-modified", T), ("expectations[1]", "expectation-modified", T)],
        id="behaviour-pairs-by-keys",
    ),
    pytest.param(
        case([mc("45")], tags=["terms", "finance"]),
        case([mc("45")], tags=["finance", "terms"]),
        [],
        id="tags-reordered",
    ),
    pytest.param(
        case([mc("45")], tags=["terms", "finance"]),
        case([mc("45")], tags=["terms", "legal"]),
        [("tags", "tags-changed", N)],
        id="tags-changed",
    ),
    pytest.param(
        case([mc("45")], invariant=True), case([mc("45")]), [("invariant", "invariant-changed", R)], id="inv-off"
    ),
    pytest.param(
        case([mc("45")]), case([mc("45")], invariant=True), [("invariant", "invariant-changed", T)], id="inv-on"
    ),
    pytest.param(
        case([mc("45")], status="accepted"),
        case([mc("45")], status="retired"),
        [("status", "retired", R)],
        id="retired",
    ),
    pytest.param(
        case([mc("45")], status="retired"),
        case([mc("45")], status="retired"),
        [],
        id="already-retired",
    ),
    pytest.param(
        case([mc("45"), mnc("30"), cite("a")], tags=["x"], invariant=True),
        case([mc("net 45"), beh(abstains=False), cite("a")], tags=["y"], status="retired"),
        [
            ("expectations[0]", "expectation-modified", T),
            ("expectations[1]", "expectation-added", T),
            ("expectations[1]", "expectation-removed", R),
            ("tags", "tags-changed", N),
            ("invariant", "invariant-changed", R),
            ("status", "retired", R),
        ],
        id="everything-in-order",
    ),
    pytest.param({}, {}, [], id="empty-contents"),
    pytest.param({}, case([mc("45")], tags=[]), [("expectations[0]", "expectation-added", T)], id="from-nothing"),
]


@pytest.mark.parametrize(("before", "after", "expected"), DIFFS)
def test_diff_contents(before, after, expected):
    changes = diff_contents(before, after)
    assert summary(changes) == expected
    assert diff_contents(before, after) == changes  # deterministic


def test_diff_modified_carries_before_after_and_original_why():
    before = case([mc("net 45 days", why="the 2026 term"), cite("agreement-2026")])
    after = case([cite("agreement-2026"), mc("45", why="any phrasing")])
    [change] = diff_contents(before, after)
    assert change.before == mc("net 45 days", why="the 2026 term")
    assert change.after == mc("45", why="any phrasing")
    assert change.why == "the 2026 term"
    assert change.reason == 'must-contain value shortened from "net 45 days" to "45" (a substring matches more answers)'
    assert is_relaxing([change])


def test_diff_added_and_removed_whys():
    before = case([mc("45", why="the term")])
    after = case([cite("agreement-2026", why="provenance")])
    added, removed = diff_contents(before, after)
    assert (added.before, added.after, added.why) == (None, cite("agreement-2026", why="provenance"), None)
    assert (removed.before, removed.after, removed.why) == (mc("45", why="the term"), None, "the term")


def test_diff_tags_reason_and_values():
    [change] = diff_contents(case([mc("45")], tags=["terms", "finance"]), case([mc("45")], tags=["terms", "legal"]))
    assert change.before == ["terms", "finance"]
    assert change.after == ["terms", "legal"]
    assert "tags changed" in change.reason
    assert "added legal" in change.reason
    assert "removed finance" in change.reason
    assert change.why is None


def test_diff_invariant_reason():
    [change] = diff_contents(case([mc("45")], invariant=True), case([mc("45")], invariant=False))
    assert (change.before, change.after) == (True, False)
    assert "invariant turned off" in change.reason


def test_diff_pairs_default_equivalent_expectations_as_neutral():
    before = case([mnc("30"), mc("early payment", **FUZZY)])
    after = case([mc("early payment", match="fuzzy", threshold=90), mnc("30", match="normalized")])
    changes = diff_contents(before, after)
    assert summary(changes) == [
        ("expectations[0]", "expectation-modified", N),
        ("expectations[1]", "expectation-modified", N),
    ]
    assert not is_relaxing(changes)


def test_module_is_pure():
    code = "import sys, cases.relaxation; sys.exit(1 if any(m.split('.')[0] == 'django' for m in sys.modules) else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
