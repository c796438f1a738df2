"""Leakage scan (cases/leakage.py): speed at scale and recall against the naive scan.

    .venv/bin/python benchmarks/bench_leakage.py [--cases 100000] [--mb 10] [--seed 7]
        [--sample-cases 300] [--sample-kb 200] [--rounds 3] [--naive-sample 100]
        [--templated] [--budget 64] [--edits 1] [--cap 256] [--skip a,b,c]

Generates seeded, realistic artifacts - system prompts (paragraphs, bullet lists),
few-shot files ("Q: ... / A: ..."), fine-tuning JSONL (``json.dumps``: ``\\n`` and
``\\uXXXX`` escapes) - from a Zipf-weighted vocabulary; 15% of the artifacts' own
questions come from the case templates (near misses). Cases: templated questions with
customers, dates and free slots, plus must-contain values (numbers and ``net N days``
under 12 characters, invoice numbers, customer + phrase, a few generic phrases that
really occur in the artifacts). Leaks are planted: exact copies (re-cased, re-spaced,
CRLF, punctuation changed, broken by a line break that JSONL turns into ``\\n``) and
fuzzy ones (1-2 typos - replaced, deleted, inserted or swapped letters - plus the
same changes). ``--templated`` is a stress variant: rigid templates with short slots,
30% of the artifacts' questions from them, so many cases have near-duplicates that
``partial_ratio`` >= 90 counts as findings.

(a) one case against 1 MB of artifacts (aim < 1 s), with and without the index build;
(b) --cases cases against --mb MB (aim < 30 s): index build and scan (wall and CPU
    time: the host may be shared), peak RSS (VmHWM), counters; recall at that scale:
    the naive scan of each planted leak's needle against its artifact, and of
    --naive-sample random needles against every artifact (the naive scan of all
    needles would take hours);
(c) recall: on --rounds planted samples (--sample-cases cases, --sample-kb KB, 20
    exact, 20 fuzzy and 10 "hard" leaks with a typo every 25 characters) the
    (needle, kind, artifact) pairs of ``scan`` must equal those of ``naive_scan``;
    reports both times and the ratio. Exits 1 if they differ.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import random
import string
import sys
import time
from pathlib import Path

# Runnable as a script from anywhere: the project root holds the `cases` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rapidfuzz import fuzz

from cases.leakage import (
    DEFAULT_BUDGET,
    DEFAULT_GUARANTEE_CAP,
    DEFAULT_GUARANTEED_EDITS,
    DEFAULT_THRESHOLD,
    ArtifactIndex,
    Needle,
    ScanStats,
    leak_normalize,
    naive_scan,
    scan,
)

FUNCTION_WORDS = [
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
    "an",
    "was",
    "we",
    "will",
    "can",
    "if",
    "our",
    "may",
    "please",
    "should",
    "must",
    "any",
    "each",
    "when",
    "which",
    "their",
    "they",
    "there",
    "been",
    "has",
    "were",
    "its",
    "into",
    "than",
    "only",
    "other",
    "also",
    "after",
    "before",
    "about",
    "over",
    "under",
    "between",
    "such",
    "these",
    "those",
    "per",
]
DOMAIN_WORDS = [
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
    "termination",
    "liability",
    "warranty",
    "purchase",
    "vendor",
    "billing",
    "statement",
    "ledger",
    "audit",
    "compliance",
    "escalation",
    "ticket",
    "support",
    "priority",
    "response",
    "answer",
    "question",
    "assistant",
    "user",
    "system",
    "model",
    "context",
    "retrieval",
    "source",
    "citation",
    "tool",
    "call",
    "confirm",
    "request",
    "review",
    "summary",
    "report",
    "total",
    "amount",
    "currency",
    "exchange",
    "rate",
    "interest",
    "penalty",
    "waiver",
    "exception",
    "approval",
    "threshold",
    "dispute",
    "resolution",
    "carrier",
    "pallet",
    "container",
    "inspection",
    "damage",
    "claim",
    "insurance",
    "coverage",
]
PHRASES = (
    "early payment discount",
    "late payment fee",
    "credit limit review",
    "purchase order number",
    "volume rebate tier",
    "minimum order quantity",
    "delivery schedule change",
    "force majeure clause",
)
SUFFIXES = ("Foods", "Labs", "Supply", "Logistics", "Holdings", "& Sons", "Industries", "Partners", "Group", "Retail")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October")
SYLLABLES = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"] + ["ar", "en", "or", "el", "an", "is", "on", "ur"]


class Corpus:
    """Seeded vocabulary, entities and templates."""

    def __init__(self, rng: random.Random, *, templated: bool = False) -> None:
        self.rng = rng
        # templated=True is the stress variant: rigid templates with short slots, and
        # 30% of the artifacts' own questions from them (a fine-tuning set generated
        # from the eval set's templates). Default: 15% of them, with roomy slots.
        self.rigid = templated
        self.template_share = 0.3 if templated else 0.15
        synthetic = set()
        while len(synthetic) < 4000:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
            synthetic.add(word)
        rare = sorted(synthetic)
        rng.shuffle(rare)
        self.vocab = FUNCTION_WORDS + DOMAIN_WORDS + rare
        # Zipf over ranks: function words first, then domain words, then the rest.
        self.weights = list(itertools.accumulate(1.0 / (r + 1) ** 1.05 for r in range(len(self.vocab))))
        self.customers = sorted(
            {
                f"{rng.choice(rare).capitalize()}{rng.choice(('', 'line', 'ridge', 'field'))} {rng.choice(SUFFIXES)}"
                for _ in range(6000)
            }
        )

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.weights, k=k)

    def sentence(self) -> str:
        rng = self.rng
        words = self.words(rng.randint(6, 18))
        if rng.random() < 0.04:
            words.insert(rng.randrange(len(words)), rng.choice(PHRASES))
        if rng.random() < 0.15:
            words.insert(rng.randrange(len(words)), rng.choice(self.customers))
        if rng.random() < 0.1:
            words.insert(rng.randrange(len(words)), str(rng.randint(2, 2030)))
        if len(words) > 8 and rng.random() < 0.3:
            words[rng.randrange(2, len(words) - 1)] += ","
        text = " ".join(words)
        return text[0].upper() + text[1:] + rng.choice(".....!?")

    def question(self) -> str:
        """A case question: template with a customer, dates and free vocabulary slots."""
        rng = self.rng
        c = rng.choice(self.customers)
        y = rng.randint(2019, 2027)
        m = rng.choice(MONTHS)

        def w(lo: int, hi: int) -> str:
            return " ".join(self.words(rng.randint(lo, hi)))

        if self.rigid:  # stress: short slots, so two instances are near-duplicates

            def w(lo: int, hi: int) -> str:
                return " ".join(self.words(lo))

        templates = (
            lambda: f"What {w(2, 4)} applies to {c} under the {y} {w(1, 3)} agreement?",
            lambda: (
                f"Can {c} get a {rng.choice(PHRASES)} on invoice INV-{rng.randint(10**6, 10**7 - 1)} if the {w(2, 4)} is {w(1, 3)}?"
            ),
            lambda: f"How many days does {c} have to {w(2, 5)} after {m} {rng.randint(1, 28)}, {y}?",
            lambda: f"Is the {rng.choice(PHRASES)} still valid for {c} after the {y} {w(1, 3)}, given {w(3, 8)}?",
            lambda: f"Why was the {w(2, 5)} for {c} changed in {m}?",
            lambda: f"{rng.choice(('What', 'When', 'Who', 'How'))} {w(5, 14)}?",
            lambda: f"Summarise the {w(3, 3)} of {c}, then explain the {w(4, 12)}.",
        )
        return rng.choice(templates)()

    def free_question(self) -> str:
        """A question that no case template produced (most of what artifacts hold)."""
        rng = self.rng
        text = " ".join(self.words(rng.randint(5, 16)))
        return f"{rng.choice(('What', 'When', 'Who', 'How', 'Why', 'Can', 'Is'))} {text}?"

    def artifact_question(self) -> str:
        """Artifacts' own questions: some from the case templates (near misses), the rest free."""
        return self.question() if self.rng.random() < self.template_share else self.free_question()

    def case(self, i: int) -> dict:
        rng = self.rng
        question = self.question()
        values = []
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            roll = rng.random()
            if roll < 0.3:
                values.append(str(rng.randint(10, 120)))  # short: not scanned
            elif roll < 0.5:
                values.append(f"net {rng.randint(10, 90)} days")  # 11 chars: not scanned
            elif roll < 0.75:
                values.append(f"invoice INV-{rng.randint(10**6, 10**7 - 1)}")
            elif roll < 0.998:
                values.append(f"{rng.choice(self.customers)} {rng.choice(PHRASES)}")
            else:
                values.append(rng.choice(PHRASES))  # generic: genuinely occurs in artifacts
        return {"id": f"case-{i:06d}", "question": question, "must_contain": values}


def needles_of(case: dict) -> list[Needle]:
    """The case's needles; case_id is (case id, j) so that each needle's findings can be told apart."""
    out = [Needle((case["id"], 0), "question", case["question"])]
    out += [Needle((case["id"], j), "must-contain", v) for j, v in enumerate(case["must_contain"], 1)]
    return out


# --------------------------------------------------------------------------- variants


def typo(rng: random.Random, text: str) -> str:
    letters = [i for i, ch in enumerate(text) if ch.isalpha()]
    i = rng.choice(letters)
    op = rng.choice(("sub", "del", "ins", "swap"))
    if op == "sub":
        return text[:i] + rng.choice(string.ascii_lowercase.replace(text[i].lower(), "")) + text[i + 1 :]
    if op == "del":
        return text[:i] + text[i + 1 :]
    if op == "ins":
        return text[:i] + rng.choice(string.ascii_lowercase) + text[i:]
    if i + 1 < len(text):
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    return text[:i]


def exact_variant(rng: random.Random, text: str) -> str:
    """Same text after L: case, spacing, line breaks and punctuation changes only."""
    style = rng.choice(("verbatim", "upper", "lower", "spaces", "crlf", "punct", "title"))
    if style == "upper":
        return text.upper()
    if style == "lower":
        return text.lower()
    if style == "spaces":
        return text.replace(" ", "   ", 3)
    if style == "crlf":
        return text.replace(" ", "\r\n", 2)
    if style == "punct":
        return text.replace("?", "").replace(" ", " - ", 1) + "!!"
    if style == "title":
        return text.title()
    return text


def fuzzy_variant(rng: random.Random, text: str, typos: int) -> str:
    out = exact_variant(rng, text)
    for _ in range(typos):
        out = typo(rng, out)
    return out


# --------------------------------------------------------------------------- artifacts


def make_artifacts(
    corpus: Corpus, total_chars: int, plants: dict[int, list[str]], n_artifacts: int
) -> list[tuple[str, str]]:
    """Artifacts of ~total_chars; plants[k] are texts to insert into artifact k."""
    rng = corpus.rng
    size_each = max(2000, total_chars // n_artifacts)
    artifacts = []
    for k in range(n_artifacts):
        kind = ("system", "fewshot", "jsonl")[k % 3]
        planted = list(plants.get(k, ()))
        parts: list[str] = []
        size = 0
        slots = sorted(rng.randrange(size_each) for _ in planted)
        while size < size_each or planted:
            leak = planted.pop() if planted and slots and size >= slots[0] else None
            if leak is not None:
                slots.pop(0)
            if kind == "system":
                if leak is not None:
                    piece = f"For example, a user may ask: {leak} Do not answer from memory."
                elif rng.random() < 0.2:
                    piece = "\n".join(f"- {corpus.sentence()}" for _ in range(rng.randint(2, 5)))
                else:
                    piece = " ".join(corpus.sentence() for _ in range(rng.randint(2, 6)))
                piece += "\n\n"
            elif kind == "fewshot":
                q = leak if leak is not None else corpus.artifact_question()
                piece = f"Q: {q}\nA: {' '.join(corpus.sentence() for _ in range(rng.randint(1, 3)))}\n\n"
            else:
                q = leak if leak is not None else corpus.artifact_question()
                if rng.random() < 0.3:
                    q = q.replace("'", "\u2019")
                messages = [
                    {"role": "system", "content": corpus.sentence()},
                    {"role": "user", "content": q},
                    {"role": "assistant", "content": "\n".join(corpus.sentence() for _ in range(rng.randint(1, 3)))},
                ]
                piece = json.dumps({"messages": messages}) + "\n"
            parts.append(piece)
            size += len(piece)
        artifacts.append((f"{kind}-{k:04d}", "".join(parts)))
    return artifacts


def plant(
    corpus: Corpus, cases: list[dict], n_artifacts: int, exact: int, fuzzy: int, hard: int = 0
) -> tuple[dict[int, list[str]], list[tuple[str, str, str, int]]]:
    """Choose cases to leak; returns plants per artifact and (case_id, kind, variant, artifact) records."""
    rng = corpus.rng
    chosen = rng.sample(range(len(cases)), exact + fuzzy + hard)
    plants: dict[int, list[str]] = {}
    records = []
    for rank, ci in enumerate(chosen):
        case = cases[ci]
        long_values = [(j, v) for j, v in enumerate(case["must_contain"], 1) if len(leak_normalize(v)) >= 12]
        if long_values and rng.random() < 0.25:
            j, text = rng.choice(long_values)
            kind = "must-contain"
        else:
            j, kind, text = 0, "question", case["question"]
        if rank < exact:
            variant = "exact"
            leaked = exact_variant(rng, text)
            if rng.random() < 0.2:  # split by a line break: JSONL turns it into "\n"
                leaked = leaked.replace(" ", "\n", 1)
        elif rank < exact + fuzzy:
            variant = "fuzzy"
            leaked = fuzzy_variant(rng, text, 1 if len(text) < 40 else rng.choice((1, 2)))
        else:
            variant = "hard"
            leaked = fuzzy_variant(rng, text, max(2, len(text) // 25))
        k = rng.randrange(n_artifacts)
        plants.setdefault(k, []).append(leaked)
        records.append(((case["id"], j), kind, variant, k))
    return plants, records


# --------------------------------------------------------------------------- measuring


class Clock:
    """Wall and CPU (process) time of a block: the host may be shared, CPU time is steadier."""

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu

    def __str__(self) -> str:
        return f"{self.wall:.2f} s (cpu {self.cpu:.2f} s)"


def vm(field: str) -> float:
    """A /proc/self/status field in MB (VmHWM = peak RSS, VmRSS = current)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pairs(findings) -> set[tuple]:
    return {(f.case_id, f.kind, f.artifact_id) for f in findings}


def bench_one_case(corpus: Corpus, opts: dict) -> None:
    cases = [corpus.case(i) for i in range(40)]
    plants, records = plant(corpus, cases, 30, exact=1, fuzzy=0)
    artifacts = make_artifacts(corpus, 1_000_000, plants, 30)
    leaked = next(c for c in cases if c["id"] == records[0][0][0])
    others = [c for c in cases if c is not leaked][:20]
    mb = sum(len(t) for _, t in artifacts) / 1e6
    with Clock() as build:
        index = ArtifactIndex(artifacts)
    with Clock() as one:
        found = scan(needles_of(leaked), index, **opts)
    with Clock() as rest:
        for case in others:
            scan(needles_of(case), index, **opts)
    print(f"(a) one case vs {mb:.2f} MB ({len(artifacts)} artifacts)")
    print(f"    index build {build}")
    print(
        f"    leaked case: scan {1000 * one.wall:.1f} ms ({len(found)} finding(s)); incl. build {build.wall + one.wall:.2f} s"
    )
    print(f"    other cases: {1000 * rest.wall / len(others):.1f} ms each on average")


def bench_scale(corpus: Corpus, n_cases: int, mb: float, sample: int, opts: dict) -> None:
    print(f"(b) {n_cases} cases vs {mb:g} MB of artifacts, 100 exact + 100 fuzzy leaks planted", flush=True)
    cases = [corpus.case(i) for i in range(n_cases)]
    n_artifacts = max(3, int(mb * 20))
    plants, records = plant(corpus, cases, n_artifacts, exact=100, fuzzy=100)
    artifacts = make_artifacts(corpus, int(mb * 1e6), plants, n_artifacts)
    needles = [n for c in cases for n in needles_of(c)]
    total = sum(len(t) for _, t in artifacts)
    gc.collect()
    rss0 = vm("VmRSS")
    with Clock() as build:
        index = ArtifactIndex(artifacts)
    rss1 = vm("VmRSS")
    stats = ScanStats()
    with Clock() as run:
        findings = scan(needles, index, stats=stats, **opts)
    peak = vm("VmHWM")
    found = pairs(findings)
    print(
        f"    {len(cases)} cases, {len(needles)} needles ({stats.skipped_short} shorter than 12: skipped), "
        f"{len(artifacts)} artifacts, {total / 1e6:.2f} MB ({index.normalized_chars / 1e6:.2f} MB normalised), "
        f"{index.distinct_keys} distinct keys"
    )
    print(f"    index build {build}, +{rss1 - rss0:.0f} MB RSS")
    print(f"    scan {run}")
    print(f"    total {build.wall + run.wall:.2f} s (cpu {build.cpu + run.cpu:.2f} s)")
    print(f"    peak RSS (VmHWM) {peak:.0f} MB (RSS before the index: {rss0:.0f} MB)")
    print(
        f"    seeds {stats.seeds}, seed occurrences {stats.occurrences} (LCS-batched {stats.batched}), "
        f"regions {stats.regions}, exact {stats.exact}, rapidfuzz calls {stats.fuzzy_calls} (widened {stats.widened})"
    )
    print(f"    findings {len(findings)} on {len(found)} (case, kind, artifact) pairs")
    # Recall at this scale. The naive scan of every needle would take hours; run it
    # (1) on each planted leak's own artifact and (2) on a random needle sample
    # against every artifact.
    by_id = {(n.case_id, n.kind): n for n in needles}
    naive_planted = fast_planted = 0
    variants: dict[str, list[int]] = {}
    for cid, kind, variant, k in records:
        res = fuzz.partial_ratio_alignment(leak_normalize(by_id[cid, kind].text), index.normalized(k))
        in_naive = res is not None and res.score >= DEFAULT_THRESHOLD
        in_fast = (cid, kind, artifacts[k][0]) in found
        naive_planted += in_naive
        fast_planted += in_naive and in_fast
        counts = variants.setdefault(variant, [0, 0])
        counts[0] += in_fast
        counts[1] += 1
    print(
        f"    planted leaks found: {', '.join(f'{v} {a}/{b}' for v, (a, b) in sorted(variants.items()))}; "
        f"naive finds {naive_planted} of them, scan finds {fast_planted} of those"
    )
    if sample:
        rng = random.Random(11)
        long_needles = [n for n in needles if len(leak_normalize(n.text)) >= 12]
        chosen = rng.sample(long_needles, min(sample, len(long_needles)))
        with Clock() as naive_clock:
            naive = pairs(naive_scan(chosen, index))
        chosen_ids = {(n.case_id, n.kind) for n in chosen}
        fast = {p for p in found if p[:2] in chosen_ids}
        per = naive_clock.cpu / len(chosen)
        print(
            f"    random sample of {len(chosen)} needles vs all artifacts: naive {len(naive)} pairs in {naive_clock} "
            f"({per:.3f} s cpu per needle: ~{per * len(long_needles) / 3600:.1f} h for all); "
            f"scan finds {len(naive & fast)} of them, {len(fast - naive)} extra"
        )
        for p in sorted(naive - fast)[:3]:
            print(f"      missed: {p} {leak_normalize(by_id[p[:2]].text)[:70]!r}")


def bench_recall(corpus: Corpus, n_cases: int, kb: int, rounds: int, opts: dict) -> bool:
    ok = True
    naive_cpu = fast_cpu = scan_cpu = 0.0
    for r in range(rounds):
        cases = [corpus.case(i) for i in range(n_cases)]
        n_artifacts = max(3, kb // 20)
        plants, records = plant(corpus, cases, n_artifacts, exact=20, fuzzy=20, hard=10)
        artifacts = make_artifacts(corpus, kb * 1000, plants, n_artifacts)
        needles = [n for c in cases for n in needles_of(c)]
        with Clock() as naive_clock:
            naive = naive_scan(needles, artifacts)
        with Clock() as fast_clock:
            index = ArtifactIndex(artifacts)
            with Clock() as scan_clock:
                fast = scan(needles, index, **opts)
        pn, pf = pairs(naive), pairs(fast)
        missed, extra = pn - pf, pf - pn
        naive_cpu += naive_clock.cpu
        fast_cpu += fast_clock.cpu
        scan_cpu += scan_clock.cpu
        planted = {(cid, kind, artifacts[k][0]): v for cid, kind, v, k in records}
        found = {v: sum(1 for p, vv in planted.items() if vv == v and p in pn) for v in ("exact", "fuzzy", "hard")}
        size = sum(len(t) for _, t in artifacts) / 1000
        print(
            f"    round {r}: {len(cases)} cases ({len(needles)} needles), {len(artifacts)} artifacts, {size:.0f} KB; "
            f"naive {naive_clock}; index + scan {fast_clock}, scan alone {scan_clock.cpu:.3f} s cpu; "
            f"pairs naive {len(pn)}, scan {len(pf)}, missed {len(missed)}, extra {len(extra)}; naive finds planted "
            f"exact {found['exact']}/20, fuzzy {found['fuzzy']}/20, hard (1 typo per 25 chars) {found['hard']}/10"
        )
        for p in sorted(missed)[:5]:
            print("      MISSED", p, planted.get(p))
        ok = ok and not missed and not extra
    print(
        f"    all rounds: naive {naive_cpu:.2f} s cpu; index + scan {fast_cpu:.2f} s cpu ({naive_cpu / fast_cpu:.0f}x "
        f"less); scan alone {scan_cpu:.2f} s cpu ({naive_cpu / scan_cpu:.0f}x less)"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--sample-cases", type=int, default=300)
    parser.add_argument("--sample-kb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="recall rounds (different data each)")
    parser.add_argument("--naive-sample", type=int, default=100, help="(b): needles checked by the naive scan")
    parser.add_argument("--templated", action="store_true", help="stress data: near-duplicate templated questions")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="scan(budget=...), 0 = unlimited")
    parser.add_argument("--edits", type=int, default=DEFAULT_GUARANTEED_EDITS, help="scan(guaranteed_edits=...)")
    parser.add_argument("--cap", type=int, default=DEFAULT_GUARANTEE_CAP, help="scan(guarantee_cap=...), 0 = none")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip", default="", help="comma list of parts to skip: a,b,c")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    opts = {"budget": args.budget or None, "guaranteed_edits": args.edits, "guarantee_cap": args.cap or None}
    print(
        f"threshold {DEFAULT_THRESHOLD:g}, budget {args.budget or 'unlimited'}, guaranteed_edits {args.edits} "
        f"(guarantee_cap {args.cap or 'none'}), "
        f"{'templated stress data' if args.templated else 'default data'}; python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cpu(s), load average {os.getloadavg()[0]:.1f}"
    )
    ok = True
    if "a" not in skip:
        bench_one_case(Corpus(random.Random(args.seed), templated=args.templated), opts)
    if "c" not in skip:
        print(f"(c) recall vs the naive scan on {args.rounds} planted sample(s)")
        corpus = Corpus(random.Random(args.seed + 1), templated=args.templated)
        ok = bench_recall(corpus, args.sample_cases, args.sample_kb, args.rounds, opts)
        print("    recall equal: " + ("yes" if ok else "NO"))
    if "b" not in skip:
        corpus = Corpus(random.Random(args.seed + 2), templated=args.templated)
        bench_scale(corpus, args.cases, args.mb, args.naive_sample, opts)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
