"""cases.neardup: near-duplicate questions over a case set (pure module, no database).

Run alone with::

    DEBUG=1 .venv/bin/python -m pytest -q -p no:django --noconftest tests/test_neardup.py
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from cases.neardup import FlaggedGroup, Pair, find_near_duplicates, flag_synthetic, group_pairs
from cases.scoring import normalize

ENGINES = [pytest.param(True, id="prefilter"), pytest.param(False, id="cdist")]


def naive(items, threshold, scorer=fuzz.ratio):
    """The reference: every i < j, in loop order, with the score of that very call."""
    texts = [normalize(q) for _, q in items]
    out = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            score = scorer(texts[i], texts[j])
            if score >= threshold:
                out.append(Pair(items[i][0], items[j][0], score))
    return out


# --- generators ------------------------------------------------------------------


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def _random_question(rng: random.Random, vocab: list[str]) -> str:
    words = [rng.choice(vocab) for _ in range(rng.randint(9, 15))]
    return " ".join(words).capitalize() + "?"


TEMPLATES = [
    "What are the payment terms for {c} under the {y} supply agreement?",
    "How much does {c} owe us on invoice INV-{n}?",
    "Is {c} still on net {d} terms, or did that change in {y}?",
    "Does the late payment fee apply to {c} orders placed after {y}?",
    "Please email {p} the overdue invoices for {c}.",
]
COMPANIES = ["Northline", "Ardent Foods", "Keller & Sons", "Blue Harbor", "Oakridge Supply", "Meridian Labs"]
PEOPLE = ["Ana Silva", "Ben Okafor", "Kira Novak", "Luis Costa"]


def _templated_question(rng: random.Random) -> str:
    """Questions from few templates: many pairs land near 85-95, where exactness matters."""
    return rng.choice(TEMPLATES).format(
        c=rng.choice(COMPANIES),
        y=rng.randint(2020, 2027),
        n=rng.randint(100, 999),
        d=rng.choice([30, 45, 60]),
        p=rng.choice(PEOPLE),
    )


def _mutations(rng: random.Random, vocab: list[str], question: str) -> dict[str, str]:
    words = question.split()
    k = rng.randrange(1, len(words) - 1)
    changed = [*words[:k], rng.choice([w for w in vocab if len(w) == len(words[k])] or ["zzz"]), *words[k + 1 :]]
    return {
        "punctuation": question.replace("?", ".").replace(" ", ", ", 1),
        "case": question.upper(),
        "word": " ".join(changed),
        "exact": question,
        "spacing": "  " + question.replace(" ", " \t ", 3) + "\n",
        "quotes": question.replace("?", "\u2019s?").replace(" ", "\u00a0", 2),
    }


def planted_set(seed: int = 1, n_base: int = 240):
    """~300 questions: random unrelated ones plus planted near-duplicates.

    Returns (items, planted groups as sets of ids, kinds by planted id).
    """
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 3000)
    items = [(f"b{i:03d}", _random_question(rng, vocab)) for i in range(n_base)]
    groups: list[set[str]] = []
    kinds: dict[str, str] = {}
    pid = 0
    for base_index in rng.sample(range(n_base), 50):
        base_id, base_q = items[base_index]
        variants = _mutations(rng, vocab, base_q)
        # Most bases get one variant; every fifth a second one (a triple).
        chosen = rng.sample(sorted(variants), 2 if base_index % 5 == 0 else 1)
        group = {base_id}
        for kind in chosen:
            vid = f"v{pid:03d}-{kind}"
            pid += 1
            items.append((vid, variants[kind]))
            group.add(vid)
            kinds[vid] = kind
        groups.append(group)
    rng.shuffle(items)
    return items, groups, kinds


def sample_1000(seed: int) -> list[tuple[str, str]]:
    """1,000 questions: random, templated, and planted near-duplicates of both."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 2000)
    questions = [_random_question(rng, vocab) for _ in range(500)]
    questions += [_templated_question(rng) for _ in range(350)]
    while len(questions) < 1000:
        base = rng.choice(questions)
        questions.append(rng.choice(list(_mutations(rng, vocab, base).values())))
    rng.shuffle(questions)
    return [(f"case-{i:04d}", q) for i, q in enumerate(questions)]


# --- planted set -------------------------------------------------------------------


@pytest.mark.parametrize("prefilter", ENGINES)
def test_planted_pairs_and_groups_are_found_and_nothing_else(prefilter):
    items, groups, kinds = planted_set()
    assert 290 <= len(items) <= 310
    pairs = find_near_duplicates(items, threshold=85, prefilter=prefilter, chunk=64)

    # Every planted variant is paired with its base, with the score the scorer gives.
    text = {cid: normalize(q) for cid, q in items}
    found = {frozenset((p.a, p.b)): p.score for p in pairs}
    for group in groups:
        base = next(cid for cid in group if cid.startswith("b"))
        for vid in group - {base}:
            assert frozenset((base, vid)) in found, (kinds[vid], text[base], text[vid])
            assert found[frozenset((base, vid))] == fuzz.ratio(text[base], text[vid])
            if kinds[vid] in ("case", "exact", "spacing"):
                assert found[frozenset((base, vid))] == 100.0

    # ... and nothing else: unrelated questions (ratio ~50) are never paired.
    planted = {frozenset((a, b)) for g in groups for a in g for b in g if a != b}
    assert set(found) <= planted
    assert group_pairs(pairs) == sorted(sorted(g) for g in groups)
    assert any(len(g) == 3 for g in group_pairs(pairs))


def test_pairs_are_in_input_order_with_a_first():
    items = [("z", "Is the fee waived?"), ("m", "unrelated question here"), ("a", "is the fee waived?")]
    assert find_near_duplicates(items) == [Pair("z", "a", 100.0)]
    assert find_near_duplicates(items[::-1]) == [Pair("a", "z", 100.0)]


# --- equality with the naive double loop ----------------------------------------------


@pytest.mark.parametrize("threshold", [85, 90])
@pytest.mark.parametrize("prefilter", ENGINES)
def test_equal_to_naive_loop_on_1000_questions(threshold, prefilter):
    items = sample_1000(seed=threshold)
    expected = naive(items, threshold)
    assert len(expected) > 200  # the sample has plenty of pairs near the threshold
    got = find_near_duplicates(items, threshold=threshold, chunk=333, prefilter=prefilter)
    assert got == expected
    assert [type(p.score) for p in got[:1]] == [float]


@pytest.mark.parametrize("chunk", [1, 7, 100, 999, 1001, 5000])
def test_chunk_sizes_that_do_not_divide_n(chunk):
    items = sample_1000(seed=3)[:257]
    expected = naive(items, 88)
    assert find_near_duplicates(items, threshold=88, chunk=chunk) == expected
    assert find_near_duplicates(items, threshold=88, chunk=chunk, prefilter=False) == expected


@pytest.mark.parametrize("threshold", [0, 0.5, 1, 50, 75.25, 99.99, 100, 100.5])
def test_extreme_and_fractional_thresholds(threshold):
    items = [*sample_1000(seed=4)[:60], ("dup-a", "Same question?"), ("dup-b", "SAME   question?")]
    expected = naive(items, threshold)
    assert find_near_duplicates(items, threshold=threshold, chunk=17) == expected
    assert find_near_duplicates(items, threshold=threshold, chunk=17, prefilter=False) == expected


def test_score_exactly_at_threshold_is_included():
    items = [("a", "abcdefghij"), ("b", "abcdefghiX"), ("c", "abcdefghXY")]
    assert fuzz.ratio("abcdefghij", "abcdefghix") == 90.0
    for prefilter in (True, False):
        assert find_near_duplicates(items, threshold=90, prefilter=prefilter) == [
            Pair("a", "b", 90.0),
            Pair("b", "c", 90.0),
        ]
        assert find_near_duplicates(items, threshold=90.0001, prefilter=prefilter) == []
        assert find_near_duplicates(items, threshold=89.5, prefilter=prefilter) == naive(items, 89.5)


@pytest.mark.parametrize("chunk", [1, 3, 50])
def test_length_window_boundary(chunk):
    # b = a + extra letters scores exactly 200 * la / (la + lb): the length bound itself.
    rng = random.Random(11)
    items = []
    for la in range(4, 70):
        a = "".join(rng.choice("abcdefghij") for _ in range(la))
        lb = max(lb for lb in range(la, 3 * la) if 200 * la / (la + lb) >= 90)
        items += [(f"a{la}", a), (f"b{la}", a + "x" * (lb - la))]
    rng.shuffle(items)
    expected = naive(items, 90)
    assert sum(p.score == 90.0 for p in expected) >= 5
    assert find_near_duplicates(items, threshold=90, chunk=chunk) == expected


def test_scores_rounding_across_uint8_boundary():
    # 89.47...: uint8 would store 89; 89.5 as a cutoff must exclude it, 89.4 include it.
    items = [("a", "abcdefghijklmnopqrs"), ("b", "abcdefghijklmnopqxy")]
    assert 89.4 < fuzz.ratio(items[0][1], items[1][1]) < 89.5
    for prefilter in (True, False):
        assert find_near_duplicates(items, threshold=89.5, prefilter=prefilter) == []
        assert len(find_near_duplicates(items, threshold=89.4, prefilter=prefilter)) == 1


@pytest.mark.parametrize("scorer", [fuzz.token_sort_ratio, fuzz.partial_ratio, fuzz.QRatio])
def test_other_scorers_use_the_cdist_engine_exactly(scorer):
    items = sample_1000(seed=5)[:200]
    assert find_near_duplicates(items, threshold=90, scorer=scorer, chunk=64) == naive(items, 90, scorer)


def test_asymmetric_scorer_is_exact_in_both_orientations():
    def first_heavy(a: str, b: str, **_: object) -> float:
        # Deliberately asymmetric: compares a with b's first half only.
        return fuzz.ratio(a, b[: max(1, len(b) // 2)])

    rng = random.Random(9)
    base = ["refund policy for damaged goods", "payment terms for northline"]
    items = []
    for i in range(40):
        q = rng.choice(base)
        items.append((f"c{i}", q if rng.random() < 0.5 else q[: len(q) // 2]))
    items.append(("x", "zzz"))
    expected = naive(items, 80, first_heavy)
    assert expected
    assert find_near_duplicates(items, threshold=80, scorer=first_heavy, chunk=7) == expected


def test_exact_duplicate_groups_expand_to_every_member_pair():
    items = [
        ("a", "What is the credit limit?"),
        ("b", "what is the credit limit?"),
        ("c", "What is the credit limit for Northline?"),
        ("d", "  WHAT is the   credit limit?  "),
        ("e", "What is the credit limit ?"),
    ]
    got = find_near_duplicates(items, threshold=80)
    assert got == naive(items, 80)
    assert [(p.a, p.b, p.score) for p in got if p.score == 100.0] == [
        ("a", "b", 100.0),
        ("a", "d", 100.0),
        ("b", "d", 100.0),
    ]
    assert group_pairs(got) == [["a", "b", "c", "d", "e"]]


def test_normalisation_makes_unicode_variants_exact_duplicates():
    items = [
        ("a", "Isn\u2019t the fee \u201cwaived\u201d \u2014 or not?"),
        ("b", 'ISN\'T THE FEE "WAIVED" - OR NOT?'),
        ("c", 'isn\'t\u00a0the fee \u200b"waived" -\tor not?'),
    ]
    assert find_near_duplicates(items) == [Pair("a", "b", 100.0), Pair("a", "c", 100.0), Pair("b", "c", 100.0)]


def test_odd_texts_empty_long_and_non_bmp():
    items = [
        ("e1", "   "),
        ("e2", ""),
        ("s", "\ud800 lone surrogate"),
        ("emoji1", "Is the \U0001f600 policy the same for \u00e9t\u00e9 orders?"),
        ("emoji2", "is the \U0001f600 policy the same for \u00e9t\u00e9 orders"),
        ("long1", "word " * 800 + "end"),
        ("long2", "word " * 799 + "words end"),
        ("x", "x"),
    ]
    for prefilter in (True, False):
        assert find_near_duplicates(items, threshold=90, prefilter=prefilter) == naive(items, 90)
        assert find_near_duplicates(items, threshold=0, prefilter=prefilter) == naive(items, 0)


@settings(max_examples=150, deadline=None)
@given(
    questions=st.lists(st.text(alphabet="ab c", max_size=12), max_size=25),
    threshold=st.floats(min_value=0, max_value=101, allow_nan=False),
    chunk=st.integers(min_value=1, max_value=30),
)
def test_property_equal_to_naive_loop(questions, threshold, chunk):
    items = [(f"c{i}", q) for i, q in enumerate(questions)]
    expected = naive(items, threshold)
    assert find_near_duplicates(items, threshold=threshold, chunk=chunk) == expected
    assert find_near_duplicates(items, threshold=threshold, chunk=chunk, prefilter=False) == expected


# --- small inputs and argument checks ---------------------------------------------------


@pytest.mark.parametrize("prefilter", ENGINES)
def test_empty_and_single_item(prefilter):
    assert find_near_duplicates([], prefilter=prefilter) == []
    assert find_near_duplicates([("only", "Is there anything?")], prefilter=prefilter) == []
    assert find_near_duplicates([("a", "Same?"), ("b", "same?")], prefilter=prefilter) == [Pair("a", "b", 100.0)]
    assert group_pairs([]) == []
    assert flag_synthetic([], {}) == []


def test_argument_checks():
    with pytest.raises(ValueError, match="unique"):
        find_near_duplicates([("a", "x"), ("a", "y")])
    with pytest.raises(ValueError, match="chunk"):
        find_near_duplicates([("a", "x")], chunk=0)
    with pytest.raises(ValueError, match="threshold"):
        find_near_duplicates([("a", "x")], threshold=float("nan"))


# --- grouping and synthetic flagging -------------------------------------------------


def test_group_pairs_connected_components_sorted():
    pairs = [Pair("c3", "c1", 95.0), Pair("c1", "c2", 92.0), Pair("x", "y", 100.0), Pair("c2", "c3", 91.0)]
    pairs.append(Pair("b9", "a1", 90.0))
    assert group_pairs(pairs) == [["a1", "b9"], ["c1", "c2", "c3"], ["x", "y"]]
    # A chain is one group even when its ends are not a pair themselves.
    assert group_pairs([Pair("p", "q", 90.0), Pair("q", "r", 90.0), Pair("r", "s", 90.0)]) == [["p", "q", "r", "s"]]


def test_flag_synthetic():
    groups = [["a", "b", "c"], ["d", "e"], ["f", "g"], ["h", "i"]]
    sources = {
        "a": "synthetic",
        "b": "trace",
        "c": "synthetic",
        "d": "synthetic",
        "e": "expert",
        "f": {"kind": "synthetic", "ref": "gen-1"},
        "g": {"kind": "synthetic"},
        "h": None,
    }
    assert flag_synthetic(groups, sources) == [
        FlaggedGroup(["a", "b", "c"], ["a", "c"], True),
        FlaggedGroup(["d", "e"], ["d"], False),
        FlaggedGroup(["f", "g"], ["f", "g"], True),
        FlaggedGroup(["h", "i"], [], False),
    ]


def test_end_to_end_report_on_planted_set():
    items, groups, _ = planted_set(seed=2)
    sources = {cid: ("synthetic" if cid.startswith("v") else "trace") for cid, _ in items}
    flagged = flag_synthetic(group_pairs(find_near_duplicates(items, threshold=85)), sources)
    assert len(flagged) == len(groups)
    # Only triples have two synthetic (planted) members.
    assert sorted(len(f.members) for f in flagged if f.flagged) == [3] * sum(len(g) == 3 for g in groups)
