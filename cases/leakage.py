"""Leakage scan: which eval cases appear, exactly or fuzzily, in registered prompt artifacts.

Pure module (stdlib + rapidfuzz; no Django, no database) so that the web layer, a
management command and ``benchmarks/bench_leakage.py`` run the very same code.

A *needle* is a case's question or one of its must-contain values; an *artifact* is a
text a lead registered (system prompt, few-shot file, fine-tuning JSONL). A *finding*
says that a needle occurs in an artifact at character ``offset`` (and ``length``) of
the artifact's ORIGINAL text with a ``partial_ratio`` score >= the threshold.

Usage::

    index = ArtifactIndex([(artifact_id, text), ...])      # once
    findings = scan([Needle(case_id, "question", text), ...], index, threshold=90)

Reference definition (``naive_scan``)
-------------------------------------
For every needle and artifact: ``fuzz.partial_ratio_alignment(L(needle), L(artifact))``
with a score >= threshold is a finding. Needles whose ``L`` is shorter than
``MIN_NEEDLE_CHARS`` (12) characters are skipped - questions and must-contain values
alike - and so are artifacts that short (they cannot contain a needle; partial_ratio
would instead score the artifact inside the needle). ``scan`` is the fast equivalent.

Normalisation ``L`` (``leak_normalize``) - why not plain ``cases.scoring.normalize``
------------------------------------------------------------------------------------
Offsets must point into the original artifact, so ``L`` keeps an exact map back to
original positions (``NormalizedText``). ``L`` is ``cases.scoring.normalize`` applied
word by word after every non-word character became a separator, i.e. "casefold +
punctuation to space + whitespace collapse" on top of the scoring normalisation,
applied identically to needles and artifacts:

1. JSON/C escapes are decoded first, so fine-tuning JSONL matches like plain text:
   ``\\n \\r \\t \\b \\f \\" \\\\ \\/`` (a backslash and one of ``nrtbf"\\/``) are separators,
   ``\\uXXXX`` becomes its character when that is a letter, digit or combining mark
   (``caf\\u00e9`` -> ``café``) and a separator otherwise (``\\u2019``, ``\\u00a0``). A
   question broken over lines inside a JSON string (``"...the\\npayment..."``) hence
   still matches exactly. (Needles get the same treatment: a question that literally
   contains ``\\n`` matches its verbatim copy.)
2. Words are maximal runs of letters and digits (``str.isalnum``), combining marks and
   zero-width characters; everything else (punctuation, symbols, ``_``, every kind of
   whitespace incl. CR/LF) separates words.
3. Each word is folded with ``cases.scoring.normalize`` (NFKC, casefold, zero-width
   removal; ASCII words are just lower-cased); words are joined by one space.

So "Net-30 terms!" and "net 30  TERMS" are equal, and "Northline's" vs "Northlines"
costs one character. Offset map: each word keeps its start; inside an ASCII word (or
any word whose fold is character-for-character) the map is linear, other words
(``ß`` -> ``ss``, ligatures, decomposed accents) get a per-character map built from the
lengths of their folded prefixes, escapes add a piecewise shift. A finding's
``offset`` is where its first normalised character came from (a separator maps to the
next word) and ``length`` runs to the end of its last character in the original.

Index and scan
--------------
*Keys* are ``KEY_CHARS`` (8) consecutive characters of ``L(text)`` that start at a word
start (forward keys) or end at a word end (backward keys). Anchoring keys on word
boundaries keeps the index at ~2 postings per word rather than one per character and
makes a key independent of where the needle sits. ``ArtifactIndex`` maps each key to
its sorted positions in the concatenated normalised artifacts.

For a needle (n = len(L(needle)), tau = threshold/100) every key is looked up and the
*seeds* are chosen (see "Recall"). An occurrence p of a seed found at offset o of the
needle puts the needle's start at ``p - o``; a window scoring >= tau in which that
seed is matched to itself starts within ``drift`` ~ 0.18n of it (fewer than
(1-tau)*n characters of either side go unmatched), so the *band*
``[p - o - drift, p - o + n + drift)`` holds every such window. Bands are checked
with an upper bound first - LCS(L(needle), band) must reach tau*n for a full window,
tau*n/(2-tau) for a shorter one at an artifact end - computed by rapidfuzz in one C
loop over all of a needle's bands. Surviving bands closer than ``drift`` merge into
regions; a region is checked with the exact bound, then ``str.find`` (an exact
occurrence scores 100, no alignment needed), then
``partial_ratio_alignment(L(needle), region, score_cutoff=threshold)`` whose best
window is reported: one finding per (needle, artifact region). rapidfuzz also scores
windows shortened by the region's ends; where such an end is not the artifact's, that
window would score higher than the naive scan scores it, so the region is widened and
rescored (and a region is never exactly n long, where rapidfuzz would also align the
region inside the needle).

Recall
------
* Sound: every finding is a window of the artifact scored as ``partial_ratio`` scores
  it, so ``scan`` reports no (needle, artifact) pair that ``naive_scan`` does not.
* ``scan`` reports a (needle, artifact) pair whenever a window scoring >= threshold
  matches one of the needle's seeds to itself (its 8 characters and anchoring space
  copied unchanged).
* Seeds: the needle's keys, rarest first, while their occurrences add up to at most
  ``budget`` (``DEFAULT_BUDGET`` = 64; ``None``: every key is a seed); then, if no seed
  is a *reliable* key (one not anchored on the needle's own ends), the rarest reliable
  key; then, rarest first and with at most ``guarantee_cap`` (256) occurrences each,
  keys that raise the number of edits (a character of ``L(needle)`` inserted, deleted
  or replaced) needed to destroy every seed, until ``guaranteed_edits`` (1) edits
  cannot. Keys that occur in no artifact count as destroyed already (a leak must have
  destroyed them too); a key is destroyed by an edit in its 8 characters or in the
  space anchoring it. Hence:

  - every leak that is exact after ``L`` is found. (A needle with no reliable key -
    ``payment terms``: no word starts after its first character with 8 characters to
    go, no word ends 8 characters in before its last - relies on a word boundary at
    one end of the copy: ``xpayment termsx`` is the form missed.)
  - with ``guaranteed_edits=1`` (default), every leak within one edit - a typo - is
    found, unless the only keys that could carry it occur more than ``guarantee_cap``
    times (a needle of very common phrases around one short distinctive word) or a
    single edit can destroy every key of the needle (short needles: ``how and of the
    the the`` loses all its keys to one edit at its 11th character). E edits: the
    same for up to E; ``guarantee_cap=None`` drops the cap.
  - Beyond that, a fuzzy leak is found when one of its keys with few occurrences
    survives: the keys on the needle's distinctive words, which is what a copied
    question with typos keeps. On a corpus small enough that every key fits in the
    budget, this is every match that keeps one key intact.

  What the budget can miss on a large corpus are near-duplicates whose only intact
  keys are common: another instance of the same template (``... for Rocefield
  Logistics after the 2027 renewal`` vs ``... for Lokufield Logistics after the 2025
  renewal`` scores 95) or an invoice number two digits off. ``partial_ratio`` >= 90
  counts them as findings; finding them all means verifying every instance of the
  template for every needle built from it, which is what ``budget=None`` (or a higher
  ``guaranteed_edits`` / ``guarantee_cap``) pays for; ``benchmarks/bench_leakage.py``
  measures it.
* Offsets may differ from the naive scan's when several alignments score the same
  (rapidfuzz reports the first window it meets); ``scan`` may report a pair several
  times, once per region, where the naive scan reports only the best alignment.
"""

from __future__ import annotations

import gc
import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from math import ceil, floor
from operator import itemgetter
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import LCSseq

from cases.scoring import normalize

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_GUARANTEED_EDITS",
    "DEFAULT_GUARANTEE_CAP",
    "DEFAULT_THRESHOLD",
    "KEY_CHARS",
    "KINDS",
    "MIN_NEEDLE_CHARS",
    "ArtifactIndex",
    "Finding",
    "Needle",
    "NormalizedText",
    "ScanStats",
    "case_needles",
    "leak_normalize",
    "naive_scan",
    "scan",
]

MIN_NEEDLE_CHARS = 12
DEFAULT_THRESHOLD = 90.0
KEY_CHARS = 8
DEFAULT_BUDGET = 64
DEFAULT_GUARANTEED_EDITS = 1
DEFAULT_GUARANTEE_CAP = 256
KINDS = ("question", "must-contain")
EXCERPT_CHARS = 160

# rapidfuzz applies score_cutoff through a distance; asking for a hair less and
# comparing the float ourselves keeps ">= threshold" identical to the naive scan.
_CUTOFF_SLACK = 1e-6
_BATCH_FROM = 16  # seed occurrences from which the LCS bound runs as one rapidfuzz batch
_MAX_PREFIX_MAP = 128  # an odd word longer than this maps proportionally

_ESCAPE = re.compile(r'\\(?:[nrtbf"\\/]|u[0-9a-fA-F]{4})')
_ASCII_SEP = re.compile(r"([^a-z0-9]+)")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Needle:
    """Text of one case to look for: its ``question`` or a ``must-contain`` value."""

    case_id: Hashable
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class Finding:
    """A needle found in an artifact.

    ``offset``/``length`` address the artifact's ORIGINAL text; ``score`` is the
    ``partial_ratio`` of the alignment (100.0 when exact after ``L``); ``excerpt`` is
    that original span, whitespace runs shown as one space, cut to ``EXCERPT_CHARS``.
    """

    case_id: Hashable
    kind: str
    artifact_id: Hashable
    offset: int
    length: int
    score: float
    excerpt: str


@dataclass(slots=True)
class ScanStats:
    """Counters ``scan`` fills in when given one (benchmarks, tuning)."""

    needles: int = 0
    skipped_short: int = 0
    seeds: int = 0
    occurrences: int = 0
    batched: int = 0
    regions: int = 0
    exact: int = 0
    fuzzy_calls: int = 0
    widened: int = 0
    findings: int = 0


def case_needles(case: Mapping[str, Any]) -> list[Needle]:
    """Needles of a case in the interchange format: its question and must-contain values.

    Short texts are kept here; ``scan`` skips what is shorter than ``MIN_NEEDLE_CHARS``
    after ``L``.
    """
    case_id = case.get("id")
    needles = []
    if isinstance(case.get("question"), str):
        needles.append(Needle(case_id, "question", case["question"]))
    for exp in case.get("expectations") or ():
        if isinstance(exp, Mapping) and exp.get("kind") == "must-contain" and isinstance(exp.get("value"), str):
            needles.append(Needle(case_id, "must-contain", exp["value"]))
    return needles


# ---------------------------------------------------------------------------
# L(text) and its offset map
# ---------------------------------------------------------------------------


@cache
def _separator_re() -> re.Pattern[str]:
    """Runs of non-word characters (module docstring, step 2), for non-ASCII text."""
    marks = []
    start = prev = -2
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)).startswith("M"):
            if cp != prev + 1:
                if start >= 0:
                    marks.append((start, prev))
                start = cp
            prev = cp
    marks.append((start, prev))
    cls = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in marks)
    # [^\w...]: not a letter/digit/underscore, not a mark, not zero-width; "_" is a
    # separator as well (\w counts it as a word character, str.isalnum does not).
    return re.compile(f"((?:[^\\w{cls}{_ZERO_WIDTH}]|_)+)")


def _decode_escapes(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """(decoded text, position of each escape in it, cumulative characters saved)."""
    if "\\" not in text:
        return text, None, None
    pieces: list[str] = []
    esc_pos: list[int] = []
    esc_cum: list[int] = []
    extra = last = dpos = 0
    for m in _ESCAPE.finditer(text):
        start, end = m.span()
        if start > last:
            pieces.append(text[last:start])
            dpos += start - last
        seq = m.group()
        char = " "
        if seq[1] == "u":
            decoded = chr(int(seq[2:], 16))
            if decoded.isalnum() or unicodedata.category(decoded).startswith("M"):
                char = decoded
        pieces.append(char)
        esc_pos.append(dpos)
        extra += end - start - 1
        esc_cum.append(extra)
        dpos += 1
        last = end
    if not esc_pos:
        return text, None, None
    pieces.append(text[last:])
    return "".join(pieces), esc_pos, esc_cum


def _words(decoded: str) -> tuple[list[str], list[int]]:
    """Words of the decoded text (ASCII ones lower-cased) and their start positions."""
    if decoded.isascii():
        parts = _ASCII_SEP.split(decoded.lower())
    else:
        parts = _separator_re().split(decoded)
    starts = list(accumulate(map(len, parts), initial=0))[0::2]
    words = parts[0::2]
    # Only the first and the last run can be empty (separators are maximal).
    if words and not words[-1]:
        words.pop()
    del starts[len(words) :]
    if words and not words[0]:
        del words[0]
        del starts[0]
    return words, starts


def _fold(words: list[str], ascii_only: bool) -> list[str]:
    if ascii_only:
        return words  # lower-cased by _words; normalize() does no more to ASCII words
    return [w.lower() if w.isascii() else normalize(w) for w in words]


def _fold_map(word: str, folded: str) -> tuple[int, ...] | None:
    """None when ``folded`` maps char-for-char onto ``word``, else its prefix fold lengths."""
    chars = [normalize(c) for c in word]
    if len(folded) == len(word) and all(len(c) == 1 for c in chars) and "".join(chars) == folded:
        return None
    if len(word) > _MAX_PREFIX_MAP:
        return ()
    lengths = [0]
    top = 0
    for i in range(1, len(word) + 1):
        top = max(top, len(normalize(word[:i])))
        lengths.append(top)
    return tuple(lengths)


def leak_normalize(text: str) -> str:
    """L(text), the text both scans match on (module docstring)."""
    if text.isascii() and "\\" not in text:
        return " ".join(_ASCII_WORD.findall(text.lower()))
    decoded = _decode_escapes(text)[0]
    folded = _fold(_words(decoded)[0], decoded.isascii())
    return " ".join(f for f in folded if f)


class NormalizedText:
    """``L(original)`` as ``text``, with the map from its positions back to ``original``."""

    __slots__ = ("_dstart", "_esc_cum", "_esc_pos", "_nstart", "_odd", "original", "plain", "text")

    def __init__(self, original: str) -> None:
        decoded, self._esc_pos, self._esc_cum = _decode_escapes(original)
        words, starts = _words(decoded)
        ascii_only = decoded.isascii()
        folded = _fold(words, ascii_only)
        odd: dict[int, tuple[tuple[int, ...], int]] = {}
        if not ascii_only:
            kept_starts, kept = [], []
            for word, start, fold in zip(words, starts, folded, strict=True):
                if not fold:
                    continue  # only zero-width characters
                if not word.isascii():
                    fmap = _fold_map(word, fold)
                    if fmap is not None:
                        odd[len(kept)] = (fmap, len(word))
                kept_starts.append(start)
                kept.append(fold)
            starts, folded = kept_starts, kept
        self.original = original
        self.text = " ".join(folded)
        # True when the words of `text` are exactly the folded words (no fold has a
        # space inside), so their starts are the key anchors.
        self.plain = ascii_only or all(" " not in f for f in folded)
        self._nstart = array("q", accumulate((len(f) + 1 for f in folded[:-1]), initial=0)) if folded else array("q")
        self._dstart = array("q", starts)
        self._odd = odd

    def __len__(self) -> int:
        return len(self.text)

    def anchors(self) -> list[int]:
        """Start of every word of ``text``, plus ``len(text) + 1``."""
        if self.plain:
            return [*self._nstart, len(self.text) + 1]
        return _anchors(self.text)

    def _orig(self, dpos: int) -> int:
        if not self._esc_pos:
            return dpos
        k = bisect_left(self._esc_pos, dpos)
        return dpos + (self._esc_cum[k - 1] if k else 0)

    def _word_len(self, k: int) -> int:
        nstart = self._nstart
        return (nstart[k + 1] - 1 if k + 1 < len(nstart) else len(self.text)) - nstart[k]

    def _decoded_pos(self, k: int, delta: int, end: bool) -> int:
        """Decoded position of char ``delta`` of word k (exclusive end after char delta-1 if ``end``)."""
        odd = self._odd.get(k)
        if odd is None:
            return self._dstart[k] + delta
        fmap, size = odd
        if not end:
            return self._dstart[k] + _char_of(fmap, size, self._word_len(k), delta)
        if delta <= 0:
            return self._dstart[k]
        return self._dstart[k] + _char_of(fmap, size, self._word_len(k), delta - 1) + 1

    def _word_end(self, k: int) -> int:
        odd = self._odd.get(k)
        return self._dstart[k] + (odd[1] if odd else self._word_len(k))

    def original_start(self, pos: int) -> int:
        """Original offset of normalised position ``pos`` (a separator: the next word's)."""
        if not self._nstart:
            return 0
        if pos >= len(self.text):
            return self._orig(self._word_end(len(self._nstart) - 1))
        k = bisect_right(self._nstart, pos) - 1
        delta = pos - self._nstart[k]
        if delta >= self._word_len(k):
            return self._orig(self._dstart[k + 1])
        return self._orig(self._decoded_pos(k, delta, end=False))

    def original_end(self, end: int) -> int:
        """Original exclusive end of normalised exclusive end ``end``."""
        if not self._nstart or end <= 0:
            return 0
        k = bisect_right(self._nstart, end - 1) - 1
        delta = end - self._nstart[k]
        if delta > self._word_len(k):
            return self._orig(self._word_end(k))
        return self._orig(self._decoded_pos(k, delta, end=True))

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """(offset, length) in ``original`` of normalised ``[start, end)``."""
        ostart = self.original_start(start)
        return ostart, max(ostart, self.original_end(end)) - ostart


def _char_of(fmap: tuple[int, ...], size: int, folded_len: int, j: int) -> int:
    if not fmap:  # too long for a prefix map: proportional
        return min(size - 1, j * size // max(folded_len, 1))
    return max(0, min(size - 1, bisect_right(fmap, j) - 1))


# ---------------------------------------------------------------------------
# Keys and the index
# ---------------------------------------------------------------------------


def _anchors(norm: str) -> list[int]:
    """Start of every word of a normalised text, plus ``len(norm) + 1``."""
    return list(accumulate((len(w) + 1 for w in norm.split(" ")), initial=0))


def _key_starts(norm: str, anchors: list[int], q: int) -> list[int]:
    """Sorted start of every key of an artifact's ``norm`` (anchors from ``_anchors``).

    Forward keys start at a word start; backward keys end at a word end, and are left
    out where they start at a word start too (the same key) or at the text start.
    """
    limit = len(norm) - q
    forward = anchors[: bisect_right(anchors, limit)]
    backward = [e - 1 - q for e in anchors[1:] if e - 1 - q > 0 and norm[e - 2 - q] != " "]
    return sorted(forward + backward)  # two sorted runs: a linear merge


def _needle_keys(norm: str, q: int) -> list[tuple[str, int, int, int]]:
    """(key, offset, a, b) for every forward and backward key of a normalised needle.

    [a, b] are the needle characters an edit must touch to keep the key from being
    found: the key and the space anchoring it (before a forward key, after a backward
    one); an insertion between two of them counts too. A key anchored on the needle's
    own start or end relies on the artifact's context (``a = b = -1``): it is looked
    up, but never counted on.
    """
    size = len(norm)
    keys = [(norm[:q], 0, -1, -1)]
    start = 0
    for word in norm.split(" "):
        end = start + len(word)
        if start and start + q <= size:
            keys.append((norm[start : start + q], start, start - 1, start + q - 1))
        b = end - q
        if b > 0 and norm[b - 1] != " ":
            keys.append((norm[b:end], b, b, end) if end < size else (norm[b:end], b, -1, -1))
        start = end + 1
    return keys


class ArtifactIndex:
    """Key index over the normalised artifacts: build once, scan many needles.

    ``artifacts``: ``(artifact_id, text)`` pairs. Holds the original texts (by
    reference), their ``L`` with offset maps, and ~2 postings per word.
    """

    def __init__(self, artifacts: Iterable[tuple[Hashable, str]], *, key_chars: int = KEY_CHARS) -> None:
        if not 1 <= key_chars <= MIN_NEEDLE_CHARS:
            raise ValueError(f"key_chars must be 1..{MIN_NEEDLE_CHARS}")
        self.key_chars = key_chars
        self.ids: list[Hashable] = []
        self.texts: list[NormalizedText] = []
        # Millions of small posting lists, none part of a cycle: keep the cyclic GC
        # from rescanning them again and again while they are built.
        gc_enabled = gc.isenabled()
        gc.disable()
        try:
            self._postings = self._build(artifacts, key_chars)
        finally:
            if gc_enabled:
                gc.enable()
        self._bases = array("q", accumulate((len(t.text) + 1 for t in self.texts[:-1]), initial=0))
        self._lengths = array("q", (len(t.text) for t in self.texts))
        self._text = "\n".join(t.text for t in self.texts)  # "\n" never occurs in L(text)

    def _build(self, artifacts: Iterable[tuple[Hashable, str]], q: int) -> dict[str, int | list[int]]:
        postings: dict[str, int | list[int]] = {}
        get = postings.get
        base = 0
        for artifact_id, text in artifacts:
            nt = NormalizedText(text)
            self.ids.append(artifact_id)
            self.texts.append(nt)
            norm = nt.text
            size = len(norm)
            if size >= MIN_NEEDLE_CHARS:
                for s in _key_starts(norm, nt.anchors(), q):
                    key = norm[s : s + q]
                    old = get(key)
                    if old is None:
                        postings[key] = base + s
                    elif type(old) is int:
                        postings[key] = [old, base + s]
                    else:
                        old.append(base + s)
            base += size + 1
        return postings  # every posting list is in increasing order

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def normalized_chars(self) -> int:
        return sum(self._lengths)

    @property
    def distinct_keys(self) -> int:
        return len(self._postings)

    def normalized(self, i: int) -> str:
        """L(text) of artifact i."""
        return self.texts[i].text

    def finding(self, needle: Needle, i: int, start: int, end: int, score: float) -> Finding:
        """A Finding for normalised ``[start, end)`` of artifact i."""
        nt = self.texts[i]
        offset, length = nt.original_span(start, end)
        return Finding(
            needle.case_id, needle.kind, self.ids[i], offset, length, score, _excerpt(nt.original, offset, length)
        )


def _excerpt(text: str, offset: int, length: int) -> str:
    shown = " ".join(text[offset : offset + min(length, 2 * EXCERPT_CHARS)].split())
    return shown if len(shown) <= EXCERPT_CHARS else shown[: EXCERPT_CHARS - 1] + "\u2026"


def _check_threshold(threshold: float) -> float:
    threshold = float(threshold)
    if not 0.0 < threshold <= 100.0:
        raise ValueError("threshold must be in (0, 100]")
    return threshold


def _check_kind(needle: Needle) -> None:
    if needle.kind not in KINDS:
        raise ValueError(f"needle kind must be one of {KINDS}, got {needle.kind!r}")


# ---------------------------------------------------------------------------
# Scans
# ---------------------------------------------------------------------------


def scan(
    needles: Iterable[Needle],
    index: ArtifactIndex,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    budget: int | None = DEFAULT_BUDGET,
    guaranteed_edits: int = DEFAULT_GUARANTEED_EDITS,
    guarantee_cap: int | None = DEFAULT_GUARANTEE_CAP,
    stats: ScanStats | None = None,
) -> list[Finding]:
    """Findings of the needles in the indexed artifacts: by needle, then artifact, then offset.

    ``budget`` (occurrences of rare keys gathered per needle; ``None``: every key is a
    seed), ``guaranteed_edits`` and ``guarantee_cap`` choose the seeds, see "Recall" in
    the module docstring. ``stats``, when given, is filled in with counters.
    """
    threshold = _check_threshold(threshold)
    if guaranteed_edits < 0:
        raise ValueError("guaranteed_edits must be >= 0")
    if (budget is not None and budget < 0) or (guarantee_cap is not None and guarantee_cap < 0):
        raise ValueError("budget and guarantee_cap must be >= 0 or None")
    tau = threshold / 100.0
    cutoff = threshold - _CUTOFF_SLACK
    st = stats if stats is not None else ScanStats()
    q = index.key_chars
    get = index._postings.get
    bases = index._bases
    lengths = index._lengths
    text = index._text
    lcs = LCSseq.similarity
    extract = process.extract
    findings: list[Finding] = []
    for needle in needles:
        _check_kind(needle)
        st.needles += 1
        nt = leak_normalize(needle.text)
        n = len(nt)
        if n < MIN_NEEDLE_CHARS:
            st.skipped_short += 1
            continue
        seeds = _seeds(nt, q, get, budget, guaranteed_edits, guarantee_cap)
        if not seeds:
            continue
        st.seeds += len(seeds)
        total = sum(seed[0] for seed in seeds)
        st.occurrences += total
        # A window scoring >= tau in which a seed is matched to itself starts within
        # `drift` of where the seed puts the needle's start (fewer than (1-tau)*n
        # characters of either side are unmatched; (2-2tau)/(2-tau)*n for a shorter
        # window at an artifact end).
        drift = ceil(n * (2.0 - 2.0 * tau) / (2.0 - tau)) + 1
        # LCS(needle, text) bounds every window of the text: a full one needs
        # LCS >= tau*n, a shorter one (only at an artifact end) >= tau*n/(2-tau).
        need_inner = max(1, floor(tau * n - _CUTOFF_SLACK))
        need_edge = max(1, floor(tau * n / (2.0 - tau) - _CUTOFF_SLACK))
        if total < _BATCH_FROM:
            candidates = [(p - offset, p) for _count, offset, hit in seeds for p in hit]
        else:
            candidates = _batch_filter(nt, seeds, text, drift, need_edge, extract, lcs)
            st.batched += total
        candidates.sort()
        found: dict[tuple[int, int], tuple[int, int, float]] = {}
        i = 0
        count = len(candidates)
        while i < count:
            first, p = candidates[i]
            last = first
            a = bisect_right(bases, p) - 1
            base = bases[a]
            size = lengths[a]
            stop = base + size
            i += 1
            while i < count and candidates[i][0] - last <= drift and base <= candidates[i][1] < stop:
                last = candidates[i][0]
                i += 1
            st.regions += 1
            lo = max(first - base - drift, 0)
            hi = min(last - base + n + drift, size)
            if hi - lo <= n:  # n + 1 chars at least (or the whole artifact), see _best
                lo = max(0, min(lo, hi - n - 1))
                hi = min(size, lo + n + 1)
            window = text[base + lo : base + hi]
            at = window.find(nt)
            if at >= 0:
                st.exact += 1
                found.setdefault((a, lo + at), (lo + at, lo + at + n, 100.0))
                continue
            if size > n and not lcs(nt, window, score_cutoff=need_edge if lo == 0 or hi == size else need_inner):
                continue
            best = _best(nt, window, text, base, size, lo, hi, cutoff, st)
            if best is not None and best[2] >= threshold:
                found.setdefault((a, best[0]), best)
        for (a, _start), (start, end, score) in sorted(found.items()):
            findings.append(index.finding(needle, a, start, end, score))
    st.findings += len(findings)
    return findings


def _seeds(
    nt: str, q: int, get: Any, budget: int | None, guaranteed_edits: int, guarantee_cap: int | None
) -> list[tuple[int, int, Any]]:
    """The needle's seeds as (occurrences, offset in the needle, posting).

    The keys are those of ``_needle_keys`` (inlined here: this runs once per needle).
    """
    size = len(nt)
    absent: list[tuple[int, int]] = []
    present = []
    hit = get(nt[:q])
    if hit is not None:
        present.append((1 if type(hit) is int else len(hit), 0, hit, -1, -1))
    start = 0
    for word in nt.split(" "):
        end = start + len(word)
        if start and start + q <= size:
            hit = get(nt[start : start + q])
            if hit is None:
                absent.append((start - 1, start + q - 1))
            else:
                present.append((1 if type(hit) is int else len(hit), start, hit, start - 1, start + q - 1))
        b = end - q
        if b > 0 and nt[b - 1] != " ":
            hit = get(nt[b:end])
            if end == size:
                if hit is not None:
                    present.append((1 if type(hit) is int else len(hit), b, hit, -1, -1))
            elif hit is None:
                absent.append((b, end))
            else:
                present.append((1 if type(hit) is int else len(hit), b, hit, b, end))
        start = end + 1
    if not present:
        return []
    present.sort(key=itemgetter(0))
    if budget is not None:
        take = total = 0
        while take < len(present) and total + present[take][0] <= budget:
            total += present[take][0]
            take += 1
        if take < len(present):
            present = _guarantee(present, take, absent, guaranteed_edits, guarantee_cap)
    return [(count, offset, (hit,) if count == 1 else hit) for count, offset, hit, _a, _b in present]


def _batch_filter(
    nt: str, seeds: list[tuple[int, int, Any]], text: str, drift: int, need: int, extract: Any, lcs: Any
) -> list[tuple[int, int]]:
    """(diagonal, position) of the seed occurrences whose band passes the LCS bound ``need``.

    One rapidfuzz call (a C loop) over every occurrence's band, cut from the
    concatenated texts: a band running into the next artifact only loosens the bound,
    and ``need`` is the looser bound (for windows at an artifact's end); the region
    check applies the exact one.
    """
    n = len(nt)
    bands: list[str] = []
    owners = []
    for _count, offset, hit in seeds:
        before, after = offset + drift, n - offset + drift
        owners.append((len(bands), offset, hit))
        if hit[0] >= before:  # postings are sorted: no band starts before the text
            bands.extend([text[p - before : p + after] for p in hit])
        else:
            bands.extend([text[p - before if p > before else 0 : p + after] for p in hit])
    starts = [owner[0] for owner in owners]
    candidates = []
    for _band, _score, k in extract(nt, bands, scorer=lcs, score_cutoff=need, limit=None):
        start, offset, hit = owners[bisect_right(starts, k) - 1]
        p = hit[k - start]
        candidates.append((p - offset, p))
    return candidates


def _guarantee(
    present: list[tuple], take: int, absent: list[tuple[int, int]], edits: int, cap: int | None
) -> list[tuple]:
    """The ``take`` rarest keys, plus what the guarantee needs (module docstring, "Recall").

    An exact copy keeps every reliable key, so one of them is taken whatever it costs.
    Then keys are added, rarest first and at most ``cap`` occurrences each, while
    ``edits`` edits can still destroy every seed (keys absent from every artifact
    count as destroyed already: a leak destroyed them too), as far as the needle's
    keys allow. A key that does not raise the edits needed buys nothing.
    """
    chosen = present[:take]
    rest = [e for e in present[take:] if e[3] >= 0]  # keys anchored on the needle's ends never count
    if not absent and not rest and not any(e[3] >= 0 for e in chosen):
        return present  # no reliable key at all: use every key
    intervals = absent + [(e[3], e[4]) for e in chosen if e[3] >= 0]
    if not intervals:
        chosen.append(rest[0])
        intervals.append((rest[0][3], rest[0][4]))
        rest = rest[1:]
    if edits == 0:
        return chosen
    if edits == 1:
        # One edit destroys every interval iff they share a point (Helly, in 1-D):
        # [lo, hi]. A key raises the count iff it lies outside that zone.
        lo = max(a for a, _b in intervals)
        hi = min(b for _a, b in intervals)
        if lo <= hi:
            for entry in rest:
                if cap is not None and entry[0] > cap:
                    break
                if entry[3] > hi or entry[4] < lo:
                    chosen.append(entry)
                    break
        return chosen
    need = min(edits + 1, _stab(intervals + [(e[3], e[4]) for e in rest]))
    have = _stab(intervals)
    for entry in rest:
        if have >= need or (cap is not None and entry[0] > cap):
            break
        more = _stab([*intervals, (entry[3], entry[4])])
        if more > have:
            intervals.append((entry[3], entry[4]))
            chosen.append(entry)
            have = more
    return chosen


def _stab(intervals: list[tuple[int, int]]) -> int:
    """Fewest edit positions hitting every interval (greedy by right end)."""
    count = 0
    last = -1
    for a, b in sorted(intervals, key=_right_end):
        if a > last:
            count += 1
            last = b
    return count


def _right_end(interval: tuple[int, int]) -> int:
    return interval[1]


def _best(
    nt: str, window: str, text: str, base: int, size: int, lo: int, hi: int, cutoff: float, st: ScanStats
) -> tuple[int, int, float] | None:
    """Best alignment of ``nt`` in artifact slice [lo, hi) = ``window``, in artifact positions.

    Every full-length window of the slice is a window of the artifact, scored as the
    naive scan scores it. rapidfuzz also scores windows cut short by the slice's ends;
    at the artifact's own ends the naive scan does the same, elsewhere such a window
    would score too high, so the slice is widened until the best window is a real one.
    """
    n = len(nt)
    while True:
        st.fuzzy_calls += 1
        res = fuzz.partial_ratio_alignment(nt, window, score_cutoff=cutoff)
        if res is None:
            return None
        start, end = res.dest_start, res.dest_end
        if end - start < n and hi - lo > n:
            widen_left = start == 0 and lo > 0
            widen_right = end == hi - lo and hi < size
            if widen_left or widen_right:
                st.widened += 1
                if widen_left:
                    lo = max(0, lo - n)
                if widen_right:
                    hi = min(size, hi + n)
                window = text[base + lo : base + hi]
                continue
        return lo + start, lo + end, res.score


def naive_scan(
    needles: Iterable[Needle],
    artifacts: Sequence[tuple[Hashable, str]] | ArtifactIndex,
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Finding]:
    """The reference: ``partial_ratio_alignment(L(needle), L(artifact)) >= threshold`` for every pair.

    One finding (the best alignment) per (needle, artifact). Slow by design.
    """
    threshold = _check_threshold(threshold)
    index = artifacts if isinstance(artifacts, ArtifactIndex) else ArtifactIndex(artifacts)
    findings: list[Finding] = []
    for needle in needles:
        _check_kind(needle)
        nt = leak_normalize(needle.text)
        if len(nt) < MIN_NEEDLE_CHARS:
            continue
        for i, art in enumerate(index.texts):
            if len(art.text) < MIN_NEEDLE_CHARS:
                continue
            res = fuzz.partial_ratio_alignment(nt, art.text)
            if res is not None and res.score >= threshold:
                findings.append(index.finding(needle, i, res.dest_start, res.dest_end, res.score))
    return findings
