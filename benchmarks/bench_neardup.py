"""Near-duplicate report over a whole case set: wall time, peak memory, exactness.

    .venv/bin/python benchmarks/bench_neardup.py [--n 100000] [--threshold 90] [--seed 7]

Generates ``--n`` seeded questions from ~30 templates and a large vocabulary (company
names, people, products, invoice numbers, dates, openers and closers), ~1% of them
planted near-duplicates of another question (case/punctuation/whitespace changes, one
word changed, exact copies, second copies forming triples), then:

* runs :func:`cases.neardup.find_near_duplicates` (``workers=-1``) plus
  ``group_pairs`` over all of them: wall time, peak RSS (``VmHWM`` of
  ``/proc/self/status``, reset just before the run when the kernel allows it), pairs
  and groups found, planted pairs recovered (a planted change can legitimately fall
  below the threshold, e.g. one word changed in a short question);
* on a ``--sample`` (1,000) subset, compares the pairs with the naive double loop
  (``fuzz.ratio(a, b) >= threshold`` for all i < j; must be equal, the script exits 1
  otherwise) and reports the naive loop's time, the engine's time and the ratio, plus
  the plain cdist engine (``prefilter=False``) for reference.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

# Runnable as a script from anywhere: the project root holds the `cases` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rapidfuzz import fuzz

from cases.neardup import Pair, find_near_duplicates, group_pairs
from cases.scoring import normalize

SYLLABLES = [
    "nor",
    "th",
    "line",
    "ar",
    "dent",
    "kel",
    "ler",
    "blue",
    "har",
    "bor",
    "oak",
    "ridge",
    "mer",
    "id",
    "ian",
    "sum",
    "mit",
    "vale",
    "crest",
    "ton",
    "ford",
    "wick",
    "field",
    "stone",
    "bright",
    "gate",
    "west",
    "brook",
    "pine",
    "lake",
    "son",
    "ley",
    "ham",
    "dale",
    "ward",
    "well",
    "more",
    "ash",
    "birch",
    "cor",
    "vin",
    "tal",
]
SUFFIXES = ["Foods", "Supply", "Labs", "Logistics", "Holdings", "Retail", "Systems", "& Sons", "Group", "Partners"]
SUFFIXES += ["Industries", "Health", "Energy", "Freight", "Pharma", "Textiles"]
FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kira",
    "Luis",
    "Maya",
    "Nils",
    "Olga",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
]
LAST = [
    "Fischer",
    "Okafor",
    "Novak",
    "Silva",
    "Larsen",
    "Kowalski",
    "Haddad",
    "Tanaka",
    "Moreau",
    "Byrne",
    "Costa",
    "Ivanova",
    "Mehta",
    "Nguyen",
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
TERMS = ["net 30", "net 45", "net 60", "2/10 net 30", "due on receipt", "net 90", "1/15 net 45"]
TOPICS = [
    "early payment discount", "late payment fee", "credit limit", "purchase order", "volume rebate",
    "minimum order quantity", "delivery schedule", "force majeure clause", "termination notice period",
    "price adjustment clause", "warranty period", "return policy", "exclusivity clause", "audit right",
    "liability cap", "renewal date", "payment terms", "freight terms", "currency clause", "tax treatment",
]  # fmt: skip
PRODUCTS = [
    "pallet racks", "cold-chain boxes", "steel fasteners", "organic flour", "lab reagents", "LED panels",
    "shipping labels", "safety gloves", "copier paper", "espresso beans", "hydraulic pumps", "solar inverters",
    "printer toner", "cleaning supplies", "packaging film", "forklift batteries", "office chairs",
    "network switches", "glass vials", "cotton yarn",
]  # fmt: skip
TOOLS = ["lookup_invoices", "apply_credit", "get_contract", "search_docs", "send_email", "create_ticket"]
OPENERS = ["", "", "", "", "Hi, ", "Quick question: ", "Hello! ", "Sorry to bother you, but ", "Urgent: "]
OPENERS += ["Hey - ", "Following up on my last message: ", "For the quarterly review, ", "Our auditor asks: "]
CLOSERS = ["", "", "", "", " Thanks!", " Please cite the contract.", " I need this today.", " Thank you."]
CLOSERS += [" Please answer briefly.", " Cite the section if you can.", " (asking for finance)", " Cheers."]
TEMPLATES = [
    "What are the payment terms for {c} under the {y} supply agreement?",
    "Is {c} still on {t} terms, or did that change in {m} {y}?",
    "How much does {c} owe us on invoice {inv}?",
    "Can you apply a credit of ${amt} to {c}'s account for the {p} shipment?",
    "Which section of the {y} agreement with {c} covers the {topic}?",
    "Does the {topic} apply to {c} orders placed after {m} {d}?",
    "Who approved the {topic} change for {c} in {m}?",
    "Please email {person} the overdue invoices for {c}.",
    "Why was invoice {inv} for {c} flagged as past due?",
    "What is the {topic} in our contract with {c}, and when does it expire?",
    "How many {p} did {c} order in {m} {y}?",
    "Has {c} paid invoice {inv} yet, and if not, how late is it?",
    "Summarise the {topic} for {c} in two sentences.",
    "Can {person} see the {topic} for {c} without admin rights?",
    "When is the next delivery of {p} to {c} scheduled?",
    "Compare the {topic} of {c} with the one we have with {c2}.",
    "Open a ticket for {c}: the {p} arrived damaged on {m} {d}.",
    "Did {c} accept the price increase on {p} announced in {m}?",
    "What was our total revenue from {c} in {y}, excluding {p}?",
    "Is the {topic} for {c} negotiable before the {m} renewal?",
    "Use {tool} to find every invoice of {c} above ${amt}.",
    "Which customers besides {c} are on {t} terms?",
    "List the open purchase orders from {c} for {p}.",
    "What did {person} say about the {topic} in the {m} call with {c}?",
    "Can we ship {p} to {c} before the credit hold is lifted?",
    "How do I dispute the {topic} charge on invoice {inv}?",
    "Is {c}'s {y} agreement still in force, or was it superseded?",
    "Give me the contact for {c}'s accounts payable team.",
    "Why did {c}'s credit limit drop to ${amt} in {m}?",
    "Does {c} get the volume rebate on {p} this quarter?",
]
SWAP_WORDS = ["urgently", "really", "contract", "supplier", "invoice", "exactly", "currently", "account"]


def _company(rng: random.Random) -> str:
    name = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
    return f"{name} {rng.choice(SUFFIXES)}"


def make_question(rng: random.Random) -> str:
    fill = {
        "c": _company(rng),
        "c2": _company(rng),
        "y": rng.randint(2019, 2027),
        "t": rng.choice(TERMS),
        "m": rng.choice(MONTHS),
        "d": rng.randint(1, 28),
        "inv": f"INV-{rng.randint(10000, 99999)}",
        "amt": f"{rng.randint(1, 900) * 50:,}",
        "p": rng.choice(PRODUCTS),
        "topic": rng.choice(TOPICS),
        "person": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
        "tool": rng.choice(TOOLS),
    }
    opener = rng.choice(OPENERS)
    body = rng.choice(TEMPLATES).format(**fill)
    if opener and not opener.endswith("! "):
        body = body[0].lower() + body[1:]
    return opener + body + rng.choice(CLOSERS)


def mutate(rng: random.Random, question: str) -> str:
    """A planted near-duplicate: what a copy-edit or a re-import typically changes."""
    kind = rng.randrange(6)
    if kind == 0:
        return question.upper() if rng.random() < 0.5 else question.swapcase()
    if kind == 1:
        return question.replace("?", ".").replace(",", "") if "?" in question else question + "?"
    if kind == 2:
        return "  " + question.replace(" ", "\t", 2) + "\n"
    if kind == 3:
        words = question.split()
        words[rng.randrange(len(words))] = rng.choice(SWAP_WORDS)
        return " ".join(words)
    if kind == 4:
        return question  # exact duplicate
    return question.replace("'", "\u2019").replace("-", "\u2013") + " "


def make_items(n: int, seed: int, dup_rate: float = 0.01) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``n`` (id, question) items, ~dup_rate of them planted; returns (items, planted id pairs)."""
    rng = random.Random(seed)
    planted_n = int(n * dup_rate)
    questions = [make_question(rng) for _ in range(n - planted_n)]
    ids = [f"q{i:06d}" for i in range(len(questions))]
    planted: list[tuple[str, str]] = []
    for k in range(planted_n):
        base = rng.randrange(len(ids))
        # One in five planted copies re-uses an earlier copy's base: triples and larger groups.
        if k and rng.random() < 0.2:
            base = int(planted[rng.randrange(len(planted))][0][1:])
        ids.append(f"p{k:06d}")
        questions.append(mutate(rng, questions[base]))
        planted.append((ids[base], ids[-1]))
    order = list(range(len(ids)))
    rng.shuffle(order)
    return [(ids[i], questions[i]) for i in order], planted


def naive_pairs(items: list[tuple[str, str]], threshold: float) -> list[Pair]:
    texts = [normalize(q) for _, q in items]
    out = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            score = fuzz.ratio(texts[i], texts[j])
            if score >= threshold:
                out.append(Pair(items[i][0], items[j][0], score))
    return out


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--threshold", type=float, default=90.0)
    parser.add_argument("--chunk", type=int, default=2000)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    t0 = time.perf_counter()
    items, planted = make_items(args.n, args.seed)
    gen_s = time.perf_counter() - t0
    lengths = sorted(len(q) for _, q in items)
    print(
        f"{len(items):,} questions ({len(planted):,} planted near-dups), generated in {gen_s:.1f} s; "
        f"length median {lengths[len(lengths) // 2]}, 5-95% {lengths[len(lengths) // 20]}-{lengths[-len(lengths) // 20]}"
    )
    print(f"cores: {os.cpu_count()}, threshold {args.threshold}, chunk {args.chunk}, workers -1")

    rss_before = _status("VmRSS")
    reset = _reset_peak()
    t0 = time.perf_counter()
    pairs = find_near_duplicates(items, threshold=args.threshold, chunk=args.chunk, workers=-1)
    groups = group_pairs(pairs)
    wall = time.perf_counter() - t0
    peak = _status("VmHWM")
    found = {(p.a, p.b) for p in pairs} | {(p.b, p.a) for p in pairs}
    recovered = sum((a, b) in found for a, b in planted)
    exact = sum(p.score == 100 for p in pairs)
    print(f"full pipeline: {wall:.1f} s wall")
    print(
        f"  peak RSS {peak / 2**20:.0f} MiB ({'reset before the run' if reset else 'whole process'}; "
        f"RSS before the run {rss_before / 2**20:.0f} MiB)"
    )
    print(f"  pairs found {len(pairs):,} ({exact:,} at score 100), groups {len(groups):,}")
    print(f"  planted pairs recovered {recovered:,} / {len(planted):,}")

    rng = random.Random(args.seed + 1)
    planted_ids = {x for pair in planted for x in pair}
    in_planted = [it for it in items if it[0] in planted_ids][: args.sample // 5]
    rest = [it for it in items if it[0] not in planted_ids]
    sample = in_planted + rng.sample(rest, args.sample - len(in_planted))
    rng.shuffle(sample)
    t0 = time.perf_counter()
    expected = naive_pairs(sample, args.threshold)
    naive_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = find_near_duplicates(sample, threshold=args.threshold, chunk=args.chunk, workers=-1)
    engine_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    got_cdist = find_near_duplicates(sample, threshold=args.threshold, chunk=args.chunk, workers=-1, prefilter=False)
    cdist_s = time.perf_counter() - t0
    equal = got == expected and got_cdist == expected
    print(
        f"sample of {len(sample):,} ({len(in_planted)} from planted groups): {len(expected):,} pairs by the naive loop"
    )
    print(f"  equal to the naive loop: {'yes' if equal else 'NO'}")
    print(f"  naive loop {naive_s:.2f} s, engine {engine_s:.3f} s ({naive_s / engine_s:.0f}x faster)")
    print(f"  plain cdist engine (prefilter=False) {cdist_s:.3f} s ({naive_s / cdist_s:.1f}x faster than naive)")
    return 0 if equal else 1


if __name__ == "__main__":
    raise SystemExit(main())
