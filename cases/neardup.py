"""Near-duplicate questions over a whole case set, for the duplicates report.

Pure module (numpy + rapidfuzz + :func:`cases.scoring.normalize`; no Django), so the
report command, the tests and ``benchmarks/bench_neardup.py`` run the same code.

Contract: ``find_near_duplicates(items, threshold=t, scorer=s)`` returns exactly the
pairs of the naive double loop over the normalised questions::

    for i < j:  if s(N(q_i), N(q_j)) >= t:  Pair(id_i, id_j, s(N(q_i), N(q_j)))

in that loop's order (by input position of ``a``, then of ``b``), with the score that
very call returns. Every stage before the last one only *selects candidates* (with
slack), and the last one calls ``scorer(a, b) >= threshold`` itself, so float
rounding anywhere else can add work but never change the result.

Pipeline:

1. Normalise each question once. Identical normalised questions are grouped by a
   dict (hashing); each group of k is k*(k-1)/2 pairs scored ``scorer(t, t)`` (100
   for every rapidfuzz scorer), and only one representative per group takes part
   in the fuzzy pass. Pairs found between representatives are expanded to every
   member pair afterwards.
2. Fuzzy pass, one of two engines:

   * ``fuzz.ratio`` (the default scorer) with ``prefilter=True``: an exact
     *lower bound* on the Indel distance prunes almost all pairs before any string
     comparison. ``ratio = 100 * (1 - d / (la + lb))`` where ``d`` is the Indel
     distance, and ``d >= sum_c |count_a(c) - count_b(c)|`` (an insertion or a
     deletion changes one character count by one), and ``d >= |la - lb|``. So a
     pair can only reach ``t`` if ``L1 <= (1 - t/100) * (la + lb)``. Any subset of
     "count of c > k" indicator levels gives a smaller L1 (each level contributes
     1 only if k lies between the two counts), so 128 such 0/1 features, chosen
     for how often they separate two questions (``2p(1-p)``), bound the same thing
     through one float32 matrix product per tile (exact on integers; the two
     fractional terms ride along as extra columns). Questions are sorted by length
     and a row block only meets columns whose length can still reach ``t``. The
     few survivors are checked against the full 64-bucket character histogram
     (integer arithmetic), then scored with ``process.cpdist`` (parallel), and
     those within 1 point of ``t`` are re-scored with ``scorer`` itself.
     Memory: ~0.65 KB per unique question (features and histogram) plus one
     ``chunk x 4096`` float32 tile (32 MB at chunk 2000) and its index arrays.
     Measured: 100,000 questions in ~30-40 s on two (shared) cores, ~200 MB above
     the caller's own memory; the cdist engine below needs ~45 minutes for that.
   * any other scorer, or ``prefilter=False``: ``process.cdist`` in row chunks,
     ``queries = unique[i:i + chunk]`` against ``choices = unique`` (the same list
     object every time), ``dtype=uint8`` so a block costs ``chunk x n`` bytes. uint8
     rounds (89.6 -> 90), and a cutoff applied inside rapidfuzz in floating point
     might differ by an ulp from ``scorer(a, b) >= t``, so the cutoff is ``t - 1``
     (a pair scoring >= t is stored as >= 1, never 0) and every non-zero cell is
     only a candidate for the exact re-check. Both triangles of each block are
     read, so asymmetric scorers are exact too (both orientations are candidates).
     Below a threshold of 1 a uint8 cell cannot separate [0, 1) from "cut off",
     so every pair is a candidate. This engine makes n^2 scorer calls: fine for a
     few thousand questions (1,000: ~0.3 s), but 20,000 took 114 s on two cores.

The bound used by the first engine holds for ``fuzz.ratio`` only (``partial_ratio``
and the token scorers can score 100 on very different lengths), which is why any
other scorer takes the second engine. ``scorer`` must be a rapidfuzz-style
similarity scorer on a 0..100 scale accepting ``score_cutoff``; ``processor`` is
never passed (the questions are already normalised).

``workers`` goes to rapidfuzz (-1: all cores). The matrix products run in numpy's
BLAS, whose thread count is its own (``OPENBLAS_NUM_THREADS``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz import fuzz, process

from cases.scoring import normalize

__all__ = ["FlaggedGroup", "Pair", "find_near_duplicates", "flag_synthetic", "group_pairs"]

SYNTHETIC = "synthetic"
# Column tile of the prefilter: a chunk x _TILE float32 product at a time (2000 rows: 32 MB).
_TILE = 4096
# 0/1 features in the matrix product, character buckets in the exact histogram check.
_FEATURES = 128
_BUCKETS = 64
# Texts per batch when counting characters; candidate pairs per slice of the exact checks.
_BATCH = 8192
_SLICE = 1 << 16
# Slack of the candidate stages in score points (below ``threshold``); see the module doc.
_SLACK = 0.01


class Pair(NamedTuple):
    """Two case ids (``a`` first in input order) whose questions score ``score``."""

    a: str
    b: str
    score: float


class FlaggedGroup(NamedTuple):
    """A group of near-duplicates; ``flagged`` when >= 2 members are synthetic."""

    members: list[str]
    synthetic: list[str]
    flagged: bool


Scorer = Callable[..., float]


def find_near_duplicates(
    items: Sequence[tuple[str, str]],
    *,
    threshold: float = 90.0,
    chunk: int = 2000,
    workers: int = -1,
    scorer: Scorer = fuzz.ratio,
    prefilter: bool = True,
) -> list[Pair]:
    """All pairs ``(a, b)`` with ``scorer(N(q_a), N(q_b)) >= threshold``; see the module doc.

    ``items`` are ``(case_id, question)``; ids must be unique. ``chunk`` is the number of
    rows per block of either engine. ``prefilter=False`` forces the plain cdist engine.
    """
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError("threshold must be a number")
    if chunk < 1:
        raise ValueError("chunk must be >= 1")
    ids = [item[0] for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("case ids must be unique")

    # 1. exact duplicates: one representative per normalised text (first-seen order).
    members: dict[str, list[int]] = {}
    for pos, (_, question) in enumerate(items):
        members.setdefault(normalize(question), []).append(pos)
    texts = list(members)
    groups = list(members.values())

    found: list[tuple[int, int, float]] = []
    for text, positions in zip(texts, groups, strict=True):
        if len(positions) > 1:
            same = scorer(text, text)
            if same >= threshold:
                found.extend((p, q, same) for k, p in enumerate(positions) for q in positions[k + 1 :])

    # 2. fuzzy pass over the representatives, then the exact re-check and expansion.
    if len(texts) > 1:
        if prefilter and scorer is fuzz.ratio:
            candidates = _ratio_candidates(texts, threshold, chunk, workers)
        else:
            candidates = _cdist_candidates(texts, threshold, chunk, workers, scorer)
        found.extend(_confirm(candidates, texts, groups, threshold, scorer))

    found.sort(key=lambda pqs: (pqs[0], pqs[1]))
    return [Pair(ids[p], ids[q], s) for p, q, s in found]


def _confirm(
    candidates: Iterable[tuple[int, int]],
    texts: list[str],
    groups: list[list[int]],
    threshold: float,
    scorer: Scorer,
) -> list[tuple[int, int, float]]:
    """Score candidate representative pairs ``u < v`` exactly and expand them to members.

    A member pair ``p < q`` (input positions) is scored in the orientation the naive
    loop uses: ``scorer(text of p, text of q)``. Representatives are numbered in
    first-seen order, so ``u``'s first member precedes every member of ``v``; the
    reverse orientation is needed only when ``v`` has a member before ``u``'s last.
    """
    out: list[tuple[int, int, float]] = []
    for u, v in candidates:
        tu, tv = texts[u], texts[v]
        gu, gv = groups[u], groups[v]
        forward = scorer(tu, tv)
        backward = scorer(tv, tu) if gv[0] < gu[-1] else None
        if forward < threshold and (backward is None or backward < threshold):
            continue
        for p in gu:
            for q in gv:
                if p < q:
                    if forward >= threshold:
                        out.append((p, q, forward))
                elif backward is not None and backward >= threshold:
                    out.append((q, p, backward))
    return out


def _all_pairs(m: int) -> Iterable[tuple[int, int]]:
    return ((u, v) for u in range(m) for v in range(u + 1, m))


def _cdist_candidates(
    texts: list[str], threshold: float, chunk: int, workers: int, scorer: Scorer
) -> Iterable[tuple[int, int]]:
    """Representative pairs ``u < v`` that may score >= threshold in either orientation."""
    m = len(texts)
    if threshold < 1:
        # A uint8 cell cannot tell a score in [0, 1) from "below the cutoff"; at such a
        # threshold (nearly) every pair qualifies anyway.
        return _all_pairs(m)
    cutoff = min(100.0, threshold - 1)
    keys: list[np.ndarray] = []
    for start in range(0, m, chunk):
        block = process.cdist(
            texts[start : start + chunk],
            texts,
            scorer=scorer,
            score_cutoff=cutoff,
            dtype=np.uint8,
            workers=workers,
        )
        rows, cols = np.divmod(np.flatnonzero(block), m)
        del block
        rows += start
        off = rows != cols
        rows, cols = rows[off], cols[off]
        keys.append(np.minimum(rows, cols) * m + np.maximum(rows, cols))
    if not keys:
        return []
    unique = np.unique(np.concatenate(keys))
    return zip(*(a.tolist() for a in np.divmod(unique, m)), strict=True)


def _ratio_candidates(texts: list[str], threshold: float, chunk: int, workers: int) -> list[tuple[int, int]]:
    """Representative pairs ``u < v`` that may reach ``fuzz.ratio >= threshold``."""
    m = len(texts)
    t_f = threshold - _SLACK  # every candidate stage works with this lowered threshold
    if t_f > 100:
        return []
    slack_len = (100 - t_f) / 100  # L1 (or |la - lb|) may be at most slack_len * (la + lb)

    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=m)
    order = np.argsort(lengths, kind="stable")
    texts_sorted = np.empty(m, dtype=object)
    texts_sorted[:] = texts
    texts_sorted = texts_sorted[order]
    lens = lengths[order]
    counts = _char_counts([texts[i] for i in order.tolist()], lens)
    # Rows of A: [f, -h, 1]; columns of B: [f, 1, -h], so A_i . B_j = f_i . f_j - h_i - h_j,
    # with h = (|f| - slack_len * len) / 2. The bound holds iff that is >= 0.
    a = _indicator_features(counts, extra=2)
    d = a.shape[1] - 2
    h = (a[:, :d].sum(axis=1, dtype=np.float64) - slack_len * lens) / 2
    a[:, d] = -h
    a[:, d + 1] = 1
    # Float32 error of one product is far below half a point: integer parts are exact
    # (< 2**24) and each of <= d + 2 additions errs by at most half an ulp of its magnitude.
    magnitude = float(d + 2 * np.abs(h).max() + 1) if m else 1.0
    margin = -(0.5 + (d + 2) * float(np.spacing(np.float32(magnitude))))
    # Length window: ratio <= 200 * la / (la + lb) for la <= lb, so lb <= la * (200 - t) / t.
    grow = (200 - t_f) / t_f if t_f > 0 else math.inf

    cand_u: list[np.ndarray] = []
    cand_v: list[np.ndarray] = []
    for i0 in range(0, m, chunk):
        i1 = min(m, i0 + chunk)
        hi = m if math.isinf(grow) else int(np.searchsorted(lens, lens[i1 - 1] * grow * (1 + 1e-9), "right"))
        rows_a = a[i0:i1]
        for c0 in range(i0, hi, _TILE):
            c1 = min(hi, c0 + _TILE)
            cols_b = a[c0:c1].copy()
            cols_b[:, [d, d + 1]] = cols_b[:, [d + 1, d]]
            prod = rows_a @ cols_b.T
            flat = np.flatnonzero(prod >= margin)
            del prod
            # Stages 2-3 in slices, so a dense tile (low threshold, templated questions)
            # never gathers more than _SLICE histogram rows at once.
            for s0 in range(0, len(flat), _SLICE):
                r, c = np.divmod(flat[s0 : s0 + _SLICE], c1 - c0)
                r += i0
                c += c0
                upper = c > r
                r, c = r[upper], c[upper]
                # Exact integer check with the full histogram (and the length difference).
                la, lb = lens[r], lens[c]
                l1 = np.abs(counts[r] - counts[c]).sum(axis=1, dtype=np.int64)
                bound = np.maximum(l1, np.abs(la - lb))
                ok = 100 * (la + lb - bound) >= t_f * (la + lb)
                r, c = r[ok], c[ok]
                if not len(r):
                    continue
                # Score the survivors in parallel; keep those within a point of the threshold
                # for the exact re-check (cpdist runs the same C++ scorer; the point covers
                # any rounding).
                scores = process.cpdist(
                    texts_sorted[r], texts_sorted[c], scorer=fuzz.ratio, dtype=np.float64, workers=workers
                )
                near = scores >= threshold - 1
                u, v = order[r[near]], order[c[near]]
                cand_u.append(np.minimum(u, v))
                cand_v.append(np.maximum(u, v))
    if not cand_u:
        return []
    return list(zip(np.concatenate(cand_u).tolist(), np.concatenate(cand_v).tolist(), strict=True))


def _char_counts(texts: list[str], lens: np.ndarray) -> np.ndarray:
    """``m x _BUCKETS`` int16 character counts: the 63 most frequent characters get a
    bucket each, all others share the last one (merging buckets only lowers L1).

    Works in batches of ``_BATCH`` texts so the per-character arrays stay small.
    """
    m = len(texts)
    batches = [(i, min(m, i + _BATCH)) for i in range(0, m, _BATCH)]

    def codes_of(i: int, j: int) -> np.ndarray:
        return np.frombuffer("".join(texts[i:j]).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

    seen, seen_n = [], []
    for i, j in batches:
        distinct, n = np.unique(codes_of(i, j), return_counts=True)
        seen.append(distinct)
        seen_n.append(n)
    distinct, inverse = np.unique(np.concatenate(seen), return_inverse=True)
    freq = np.bincount(inverse, weights=np.concatenate(seen_n), minlength=len(distinct))
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[np.argsort(-freq, kind="stable")] = np.arange(len(distinct))
    bucket_of = np.minimum(rank, _BUCKETS - 1)

    counts = np.empty((m, _BUCKETS), dtype=np.int16)
    for i, j in batches:
        bucket = bucket_of[np.searchsorted(distinct, codes_of(i, j))]
        owner = np.repeat(np.arange(j - i, dtype=np.int64), lens[i:j])
        block = np.bincount(owner * _BUCKETS + bucket, minlength=(j - i) * _BUCKETS).reshape(j - i, _BUCKETS)
        # Clipping is 1-Lipschitz, so clipped counts still bound L1 from below.
        counts[i:j] = np.minimum(block, np.iinfo(np.int16).max)
    return counts


def _indicator_features(counts: np.ndarray, extra: int) -> np.ndarray:
    """float32 0/1 features ``count[:, b] > k`` for the ``_FEATURES`` levels most likely
    to differ between two questions (``2p(1-p)``), followed by ``extra`` free columns."""
    m = counts.shape[0]
    scored: list[tuple[float, int, int]] = []
    for b in range(counts.shape[1]):
        col = counts[:, b]
        top = int(col.max())
        if top <= 0:
            continue
        above = m - np.cumsum(np.bincount(col, minlength=top + 1))[:top]  # above[k] = #(col > k)
        p = above / m
        scored.extend((float(2 * pk * (1 - pk)), b, k) for k, pk in enumerate(p.tolist()))
    scored.sort(key=lambda e: (-e[0], e[1], e[2]))
    chosen = scored[:_FEATURES]
    feats = np.empty((m, len(chosen) + extra), dtype=np.float32)
    for j, (_, b, k) in enumerate(chosen):
        feats[:, j] = counts[:, b] > k
    return feats


def group_pairs(pairs: Iterable[Pair]) -> list[list[str]]:
    """Connected components of the pair graph (each of size >= 2).

    Members are sorted (string order), groups by their first member.
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for pair in pairs:
        a, b = pair[0], pair[1]
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    components: dict[str, list[str]] = {}
    for node in parent:
        components.setdefault(find(node), []).append(node)
    return sorted(sorted(group) for group in components.values() if len(group) >= 2)


def _kind(source: Any) -> Any:
    if isinstance(source, Mapping):
        return source.get("kind")
    return source


def flag_synthetic(groups: Iterable[Sequence[str]], sources: Mapping[str, Any]) -> list[FlaggedGroup]:
    """One :class:`FlaggedGroup` per group, in order: its synthetic members and whether
    there are >= 2 of them ("synthetic cases that are too alike").

    ``sources`` maps a case id to its source kind (``"synthetic"``, ``"trace"``, ...;
    a ``{"kind": ...}`` mapping is accepted too); missing ids have no source.
    """
    out: list[FlaggedGroup] = []
    for group in groups:
        synthetic = [cid for cid in group if _kind(sources.get(cid)) == SYNTHETIC]
        out.append(FlaggedGroup(list(group), synthetic, len(synthetic) >= 2))
    return out
