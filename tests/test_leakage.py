"""Leakage scan (cases/leakage.py): normalisation and offsets, exact/fuzzy leaks, recall vs naive.

Pure tests, no database:

    DEBUG=1 .venv/bin/python -m pytest -q -p no:django --noconftest tests/test_leakage.py
"""

from __future__ import annotations

import json
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from cases import leakage
from cases.leakage import (
    MIN_NEEDLE_CHARS,
    ArtifactIndex,
    Finding,
    Needle,
    NormalizedText,
    ScanStats,
    case_needles,
    leak_normalize,
    naive_scan,
    scan,
)
from cases.scoring import normalize

QUESTION = "What payment terms apply to Northline Foods under the 2026 supply agreement?"


def find(needles, artifacts, **options) -> list[Finding]:
    return scan(needles, ArtifactIndex(artifacts), **options)


def q(text: str, case_id: str = "c1") -> Needle:
    return Needle(case_id, "question", text)


def mc(text: str, case_id: str = "c1") -> Needle:
    return Needle(case_id, "must-contain", text)


def span(artifact: str, finding: Finding) -> str:
    return artifact[finding.offset : finding.offset + finding.length]


# --------------------------------------------------------------------------- L(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What  payment-terms APPLY?", "what payment terms apply"),
        ("line one\r\nline\ttwo", "line one line two"),
        ("Northline's net_30 (terms)", "northline s net 30 terms"),
        ("  \u201cquoted\u201d \u2014 dash  ", "quoted dash"),
        ("Stra\u00dfe \ufb01nal caf\u00e9", "strasse final caf\u00e9"),
        ("pay\u200bment", "payment"),  # zero-width characters vanish inside a word
        ("e\u0301t\u00e9", normalize("e\u0301t\u00e9")),  # decomposed accent composes (NFKC)
        ("the\\npayment", "the payment"),  # JSON escape \n is a separator
        ('say \\"hi\\" \\\\ ok', "say hi ok"),
        ("caf\\u00e9 Northline\\u2019s", "caf\u00e9 northline s"),  # \uXXXX decoded
        ("", ""),
    ],
)
def test_leak_normalize(text, expected):
    assert leak_normalize(text) == expected
    assert NormalizedText(text).text == expected


def test_words_are_folded_by_scoring_normalize():
    for word in ["\uff2e\uff45\uff54", "\u00c9T\u00c9", "\u2460"]:
        assert leak_normalize(word) == normalize(word)


TRICKY = (
    string.ascii_letters
    + string.digits
    + " \t\r\n.,;:!?'\"-_()/\\"
    + "\u00e9\u00df\ufb01\u2019\u201c\u00a0\u200b\u0301\uff21\u0130"
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=TRICKY, max_size=60))
def test_offset_map_points_back_to_each_word(text):
    nt = NormalizedText(text)
    assert nt.text == leak_normalize(text)
    pos = 0
    for word in nt.text.split(" ") if nt.text else []:
        offset, length = nt.original_span(pos, pos + len(word))
        assert 0 <= offset <= offset + length <= len(text)
        # The original span of a word normalises to that word (ASCII words exactly;
        # a word whose fold changes length may take a neighbouring mark along).
        assert word in leak_normalize(text[offset : offset + length]) or not word.isascii()
        pos += len(word) + 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=11), min_size=1, max_size=9))
def test_scan_looks_up_exactly_the_documented_keys(words):
    # _seeds inlines _needle_keys for speed; both must name the same (key, offset)s.
    nt = " ".join(words)
    asked: list[str] = []

    def get(key):
        asked.append(key)
        return len(asked) - 1  # one occurrence, "at" the ask number

    seeds = leakage._seeds(nt, leakage.KEY_CHARS, get, None, 0, None)
    looked_up = sorted((asked[pos], offset) for _count, offset, (pos,) in seeds)
    assert looked_up == sorted((key, offset) for key, offset, _a, _b in leakage._needle_keys(nt, leakage.KEY_CHARS))


# --------------------------------------------------------------------------- exact leaks and offsets


@pytest.mark.parametrize(
    "prefix",
    [
        "You are a helpful assistant.\n\nExample question: ",
        "SYSTEM PROMPT\r\n\r\nYou  are   a   HELPFUL assistant.\r\n\r\nExample:\r\n  ",
        "Caf\u00e9 \u201cStra\u00dfe\u201d \ufb01nal \u2014 e\u0301te\u0301 \u00a0\u200b notes: ",
        '{"role": "system", "content": "caf\\u00e9 \\"x\\"\\n\\ty"}\n{"content": "',
    ],
    ids=["plain", "crlf-spaces-case", "non-ascii-before", "json-escapes-before"],
)
def test_exact_leak_offset_points_into_the_original(prefix):
    artifact = prefix + QUESTION + " Answer: net 45 days.\n" + "Filler sentence about invoices. " * 20
    [finding] = find([q(QUESTION)], [("prompt", artifact)])
    assert finding.score == 100.0
    assert finding.offset == len(prefix)
    # The span runs from the first to the last word character of the match ("?" is
    # punctuation, not part of L).
    assert span(artifact, finding) == QUESTION[:-1]
    assert finding.excerpt == QUESTION[:-1]
    assert (finding.case_id, finding.kind, finding.artifact_id) == ("c1", "question", "prompt")


def test_exact_leak_with_changed_case_spacing_and_line_breaks():
    leaked = "WHAT payment   terms\r\napply to NORTHLINE foods -- under the 2026 Supply-Agreement"
    artifact = "Q: " + leaked + "?\r\nA: It depends.\r\n"
    [finding] = find([q(QUESTION)], [("fewshot", artifact)])
    assert finding.score == 100.0
    assert finding.offset == 3
    assert span(artifact, finding) == leaked
    assert finding.excerpt == "WHAT payment terms apply to NORTHLINE foods -- under the 2026 Supply-Agreement"


def test_every_region_is_reported_with_its_own_offset():
    first = "Intro text here. " + QUESTION
    artifact = first + " Some other words in between, " * 10 + QUESTION.upper()
    findings = find([q(QUESTION)], [("a", artifact)])
    assert [f.offset for f in findings] == [len("Intro text here. "), artifact.index(QUESTION.upper())]
    assert all(f.score == 100.0 for f in findings)


def test_findings_are_ordered_by_needle_then_artifact_then_offset():
    needles = [q(QUESTION, "c2"), mc("early payment discount", "c1")]
    artifacts = [("x", "Nothing relevant at all in this one."), ("b", "An early payment discount. " + QUESTION)]
    findings = find(needles, artifacts)
    assert [(f.case_id, f.artifact_id) for f in findings] == [("c2", "b"), ("c1", "b")]


# --------------------------------------------------------------------------- fuzzy leaks


@pytest.mark.parametrize(
    "leaked",
    [
        "What payment terms apply to Northline Foods, under the 2026 supply-agreement!!",  # punctuation
        "what PAYMENT terms apply to northline FOODS under THE 2026 supply agreement",  # case
        "What paymnet terms apply to Northline Foods under the 2026 supply agreement?",  # typo
        "What payment terms apply to Nortline Foods under the 2026 supply agreement?",  # typo in the name
        "What payment terms do apply to Northline Foods under the 2026 supply agreement?",  # a word added
    ],
)
def test_fuzzy_leak_is_found(leaked):
    artifact = "Few-shot examples follow.\n\nQ: " + leaked + "\nA: Net 45.\n"
    findings = find([q(QUESTION)], [("fewshot", artifact)])
    assert len(findings) == 1
    [finding] = findings
    expected = fuzz.partial_ratio(leak_normalize(QUESTION), leak_normalize(artifact))
    assert finding.score == pytest.approx(expected)
    assert 90 <= finding.score <= 100
    # The reported span is the leaked question (give or take a character at its ends).
    assert abs(finding.offset - artifact.index("Q: ") - 3) <= 2
    assert leak_normalize(span(artifact, finding))[:20] in leak_normalize(leaked)


def test_a_typo_in_the_only_distinctive_word_is_covered_by_guaranteed_edits():
    # Every key of the needle but those on "2027" occurs 241 times; one typo in "2027"
    # destroys all the keys on it, so no rare key survives. guaranteed_edits=1 (the
    # default) promises that one edit cannot hide a leak: it pays for verifying a
    # common key's occurrences, up to guarantee_cap of them.
    needle = q("Is the late payment fee still valid for 2027 after the renewal")
    filler = (
        "Is the late payment fee still valid for the whole northern warehouse region after the renewal? No.\n" * 120
    )
    leak = "Is the late payment fee still valid for 2037 after the renewal"
    artifact = filler + leak + "? Yes.\n" + filler
    index = ArtifactIndex([("ft", artifact)])
    assert [f.offset for f in naive_scan([needle], index)] == [len(filler)]
    for options in ({}, {"budget": 0}, {"budget": None}, {"budget": 0, "guarantee_cap": None}):
        [finding] = scan([needle], index, **options)
        assert (finding.offset, span(artifact, finding)) == (len(filler), leak)
    assert scan([needle], index, budget=0, guaranteed_edits=0) == []
    assert scan([needle], index, budget=0, guarantee_cap=200) == []  # the common keys occur 241 times


def test_naive_semantics_include_near_duplicates_of_templates():
    # partial_ratio >= 90 on a long templated question: another customer's instance
    # of the same template counts as a finding for the naive scan, hence for scan.
    needle = q("Is the late payment fee still valid for Rocefield Logistics after the 2027 renewal")
    artifact = "Q: Is the late payment fee still valid for Lokufield Logistics after the 2025 renewal?\n"
    assert naive_scan([needle], [("a", artifact)])
    assert find([needle], [("a", artifact)])


# --------------------------------------------------------------------------- not found


def test_unrelated_text_is_not_found():
    artifact = "You are a support assistant for a logistics company. Be concise and polite.\n" * 50
    assert find([q(QUESTION), mc("early payment discount")], [("sys", artifact)]) == []


def test_near_miss_below_the_threshold_is_not_found():
    artifact = "What delivery schedule applies to Southgate Retail under the 2019 framework contract?"
    assert fuzz.partial_ratio(leak_normalize(QUESTION), leak_normalize(artifact)) < 90
    assert find([q(QUESTION)], [("a", artifact)]) == []


def test_threshold_is_respected():
    leaked = "What paymnet terms aply to Northline Foods under the 2026 suply agreement"
    artifact = "Q: " + leaked
    score = fuzz.partial_ratio(leak_normalize(QUESTION), leak_normalize(artifact))
    assert 90 <= score < 100
    [finding] = find([q(QUESTION)], [("a", artifact)], threshold=90)
    assert finding.score == pytest.approx(score)
    assert find([q(QUESTION)], [("a", artifact)], threshold=score)
    assert not find([q(QUESTION)], [("a", artifact)], threshold=score + 0.01)


# --------------------------------------------------------------------------- what is scanned


def test_must_contain_values_of_12_chars_or_more_are_scanned_shorter_ones_not():
    artifact = "Policy: the early payment discount is 2%; invoices are net 45 days; see clause 7."
    needles = [
        mc("early payment discount", "long"),  # 22 chars
        mc("net 45 days", "short"),  # 11 chars: present, but not scanned
        mc("Net-45 days.", "short-punct"),  # 12 raw chars, 11 after L: not scanned
        mc("net 45 days;", "short2"),
        mc("2%; invoices", "exactly-12"),  # "2 invoices" is 10 after L: not scanned
        mc("is 2 invoices are", "ok"),
    ]
    stats = ScanStats()
    findings = find(needles, [("policy", artifact)], stats=stats)
    assert sorted({f.case_id for f in findings}) == ["long", "ok"]
    assert stats.skipped_short == 4
    assert len(leak_normalize("payment term")) == MIN_NEEDLE_CHARS
    assert find([mc("payment term")], [("p", "The payment terms are fixed.")])


def test_short_questions_are_skipped_too():
    assert find([q("Net 45?")], [("a", "Net 45? Net 45? Net 45? Net 45?")]) == []


def test_case_needles_takes_question_and_must_contain_values():
    case = {
        "id": "northline-terms",
        "question": QUESTION,
        "expectations": [
            {"kind": "must-contain", "value": "45", "why": "w"},
            {"kind": "must-contain", "value": "early payment discount", "match": "fuzzy", "why": "w"},
            {"kind": "must-not-contain", "value": "30 days net terms", "why": "w"},
            {"kind": "must-cite", "documentId": "supply-agreement-northline-2026", "why": "w"},
        ],
    }
    assert case_needles(case) == [
        Needle("northline-terms", "question", QUESTION),
        Needle("northline-terms", "must-contain", "45"),
        Needle("northline-terms", "must-contain", "early payment discount"),
    ]


def test_bad_arguments_are_rejected():
    index = ArtifactIndex([("a", "text " * 10)])
    with pytest.raises(ValueError, match="kind"):
        scan([Needle("c", "must-not-contain", QUESTION)], index)
    with pytest.raises(ValueError, match="threshold"):
        scan([q(QUESTION)], index, threshold=0)
    with pytest.raises(ValueError, match="guaranteed_edits"):
        scan([q(QUESTION)], index, guaranteed_edits=-1)
    with pytest.raises(ValueError, match="budget"):
        scan([q(QUESTION)], index, budget=-1)


# --------------------------------------------------------------------------- JSONL


def test_leak_split_by_a_jsonl_newline_escape_is_an_exact_match():
    # In a fine-tuning JSONL file the question spans two lines inside a JSON string,
    # so the file holds a backslash and an "n". L decodes JSON escapes, so this is an
    # exact (score 100) match whose span covers the escape.
    broken = "What payment terms apply to\nNorthline Foods under the 2026 supply agreement?"
    line = json.dumps({"messages": [{"role": "user", "content": broken}, {"role": "assistant", "content": "Net 45."}]})
    artifact = json.dumps({"messages": [{"role": "user", "content": "Hello there, how are you today?"}]}) + "\n" + line
    assert "to\\nNorthline" in artifact
    [finding] = find([q(QUESTION)], [("ft.jsonl", artifact)])
    assert finding.score == 100.0
    assert span(artifact, finding) == "What payment terms apply to\\nNorthline Foods under the 2026 supply agreement"
    assert finding.offset == artifact.index("What payment")


def test_jsonl_unicode_escapes_match_the_typographic_original():
    needle = q("Is Northline\u2019s caf\u00e9 account still on net 45 terms")
    artifact = json.dumps({"content": "Q: Is Northline's caf\u00e9 account still on net 45 terms? A: yes"})
    assert "\\u00e9" in artifact  # json.dumps escapes non-ASCII
    [finding] = find([needle], [("ft.jsonl", artifact)])
    assert finding.score == 100.0
    assert span(artifact, finding) == "Is Northline's caf\\u00e9 account still on net 45 terms"


# --------------------------------------------------------------------------- artifact edge cases


def test_artifact_shorter_than_the_needle_behaves_like_naive():
    artifacts = [("short", "payment terms apply to Northline Foods"), ("tiny", "Northline")]
    needles = [q(QUESTION)]
    assert {f.artifact_id for f in find(needles, artifacts)} == {f.artifact_id for f in naive_scan(needles, artifacts)}
    assert {f.artifact_id for f in naive_scan(needles, artifacts)} == {"short"}  # "tiny" < 12 chars: ignored


def test_leak_at_the_very_start_and_end_of_artifacts():
    artifacts = [("start", QUESTION + " and more text follows here."), ("end", "Text before it. " + QUESTION)]
    findings = find([q(QUESTION)], artifacts)
    assert [(f.artifact_id, f.offset, f.score) for f in findings] == [("start", 0, 100.0), ("end", 16, 100.0)]


def test_a_window_cut_short_by_the_slice_is_widened_not_reported():
    # The needle's first 85% sit right before the slice's end; cut there, rapidfuzz
    # would score the shortened window 2*0.85n/1.85n ~ 92, but every real window of
    # the artifact scores ~85: the slice is widened and nothing is reported.
    nt = leak_normalize(QUESTION)
    n = len(nt)
    cut = nt[: int(n * 0.85)]
    norm = "zzz qqq xxx " * 20 + cut + " vvv kkk jjj" * 20
    assert fuzz.partial_ratio(nt, norm) < 90
    hi = norm.index(cut) + len(cut)
    lo = hi - n - 5
    stats = ScanStats()
    best = leakage._best(nt, norm[lo:hi], norm, 0, len(norm), lo, hi, 90 - 1e-6, stats)
    assert best is None or best[2] < 90
    assert stats.widened >= 1


# --------------------------------------------------------------------------- recall vs naive

VOCAB = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "for",
    "is",
    "on",
    "that",
    "by",
    "this",
    "with",
    "you",
    "it",
    "not",
    "or",
    "be",
    "are",
    "from",
    "at",
    "as",
    "your",
    "all",
    "have",
    "new",
    "more",
    "invoice",
    "payment",
    "discount",
    "credit",
    "customer",
    "agreement",
    "contract",
    "terms",
    "supplier",
    "order",
    "delivery",
    "shipment",
    "balance",
    "account",
    "refund",
    "rebate",
    "schedule",
    "quarter",
    "approval",
    "manager",
    "policy",
    "document",
    "section",
    "clause",
    "limit",
    "fee",
    "tax",
    "freight",
    "return",
    "warehouse",
    "region",
    "price",
    "quote",
    "volume",
    "minimum",
    "quantity",
    "early",
    "late",
    "net",
    "due",
    "date",
    "notice",
    "renewal",
]
NAMES = [
    "".join(random.Random(i).choice("bcdfgklmnprstvz") + random.Random(i * 7 + 1).choice("aeiou") for _ in range(3))
    for i in range(400)
]


class Sample:
    """300 cases against ~200 KB of artifacts with 20 exact and 20 fuzzy planted leaks."""

    def __init__(self, seed: int) -> None:
        rng = self.rng = random.Random(seed)
        self.cases = [self.case(i) for i in range(300)]
        leaked = rng.sample(self.cases, 40)
        plants: dict[int, list[str]] = {}
        self.planted = []
        for j, case in enumerate(leaked):
            long_values = [n for n in case[1:] if len(leak_normalize(n.text)) >= 16]
            needle = rng.choice(long_values) if long_values and rng.random() < 0.3 else case[0]
            text = needle.text
            if j < 20:  # exact after L
                text = rng.choice([text, text.upper(), text.replace(" ", "  \r\n", 2), text.replace("?", "!!")])
            else:  # fuzzy: a typo in a word (+ case/punctuation)
                i = rng.choice([k for k, ch in enumerate(text) if ch.isalpha()])
                text = text[:i] + rng.choice("xyzq") + text[i + 1 :]
                text = rng.choice([text, text.lower(), text.replace(" ", " - ", 1)])
            k = rng.randrange(10)
            plants.setdefault(k, []).append(text)
            self.planted.append((needle, k))
        self.artifacts = [(f"artifact-{k}", self.artifact(k, plants.get(k, []))) for k in range(10)]
        self.needles = [n for case in self.cases for n in case]

    def words(self, k: int) -> str:
        return " ".join(self.rng.choice(VOCAB) for _ in range(k))

    def case(self, i: int) -> list[Needle]:
        rng = self.rng
        name = rng.choice(NAMES).capitalize() + " " + rng.choice(["Foods", "Labs", "Supply"])
        question = rng.choice(
            [
                f"What {self.words(2)} applies to {name} under the {rng.randint(2019, 2027)} {self.words(2)}?",
                f"Is the {self.words(3)} still valid for {name} after the {self.words(2)}?",
                f"{rng.choice(['How', 'Why', 'When'])} {self.words(rng.randint(4, 12))}?",
            ]
        )
        needles = [Needle(("case", i, 0), "question", question)]
        for j in range(1, rng.randint(1, 3)):
            value = rng.choice(
                [f"{name} {self.words(2)}", str(rng.randint(10, 99)), f"INV-{rng.randint(10**5, 10**6)}"]
            )
            needles.append(Needle(("case", i, j), "must-contain", value))
        return needles

    def artifact(self, k: int, plants: list[str]) -> str:
        rng = self.rng
        parts = []
        while sum(map(len, parts)) < 20_000:
            if k % 3 == 2:  # fine-tuning JSONL
                content = self.words(rng.randint(6, 14)).capitalize() + "?"
                if plants and rng.random() < 0.1:
                    content = plants.pop()
                parts.append(json.dumps({"messages": [{"role": "user", "content": content}]}) + "\n")
            else:
                sentence = self.words(rng.randint(6, 16)).capitalize() + rng.choice([". ", "? ", ".\r\n"])
                if plants and rng.random() < 0.05:
                    sentence = "Example: " + plants.pop() + "\n"
                parts.append(sentence)
        parts.extend("Example: " + p + "\n" for p in plants)
        return "".join(parts)


def pairs(findings):
    return {(f.case_id, f.kind, f.artifact_id) for f in findings}


@pytest.mark.parametrize("seed", [1, 2])
def test_recall_equals_the_naive_scan_on_a_planted_sample(seed):
    sample = Sample(seed)
    assert 180_000 < sum(len(t) for _, t in sample.artifacts) < 260_000
    naive = pairs(naive_scan(sample.needles, sample.artifacts))
    fast = pairs(scan(sample.needles, ArtifactIndex(sample.artifacts)))
    assert fast == naive
    planted = {(n.case_id, n.kind, sample.artifacts[k][0]) for n, k in sample.planted}
    assert len(planted) == 40
    # every planted leak is a naive finding (the fuzzy ones score >= 90), hence found
    assert planted <= naive, planted - naive


def test_scan_findings_are_windows_the_naive_scan_scores_the_same():
    sample = Sample(3)
    naive = {(f.case_id, f.artifact_id): f for f in naive_scan(sample.needles, sample.artifacts)}
    for f in scan(sample.needles, ArtifactIndex(sample.artifacts)):
        best = naive[f.case_id, f.artifact_id]
        assert f.score <= best.score + 1e-9
        if f.score == 100.0:
            assert leak_normalize(span(dict(sample.artifacts)[f.artifact_id], f)) == leak_normalize(
                next(n.text for n in sample.needles if n.case_id == f.case_id)
            )
