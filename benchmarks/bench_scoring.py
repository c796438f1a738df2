"""Throughput of the scoring engine against the floor of unavoidable work.

    .venv/bin/python benchmarks/bench_scoring.py [--n 100000] [--seed 7]

Generates seeded ~1 KB answers and cases of 3-4 expectations, then measures on one
core, in the same run:

* engine: ``compile_case`` once per case, ``CompiledCase.score`` per response;
* floor: what no engine can skip - normalise the answer once, then one search per
  expectation (``str.find`` for normalized/exact, ``fuzz.partial_ratio`` for fuzzy,
  set membership for must-cite, the bare lookups/phrase scans for behaviour).

for an all-normalized mix and a mixed-modes mix (exact and fuzzy included).
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

# Runnable as a script from anywhere: the project root holds the `cases` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rapidfuzz import fuzz

from cases.scoring import (
    DEFAULT_CLARIFICATION_PHRASES,
    DEFAULT_REFUSAL_PHRASES,
    compile_case,
    normalize,
)

CUSTOMERS = ["Northline", "Ardent Foods", "Keller & Sons", "Blue Harbor", "Oakridge Supply", "Meridian Labs"]
TERMS = ["net 30", "net 45", "net 60", "2/10 net 30", "due on receipt"]
DOCS = [f"supply-agreement-{c.lower().split()[0]}-{y}" for c in CUSTOMERS for y in (2024, 2025, 2026)]
TOOLS = ["lookup_invoices", "apply_credit", "get_contract", "search_docs", "send_email"]
PHRASES = [
    "early payment discount",
    "late payment fee",
    "credit limit",
    "purchase order",
    "volume rebate",
    "minimum order quantity",
    "delivery schedule",
    "force majeure",
]
SENTENCES = [
    "{c} is on {t} terms under the {y} supply agreement.",
    "The {p} applies to invoices issued after {m} {d}, {y}.",
    "According to section {s}.{d2} of the agreement, the {p} is {n}% of the invoice total.",
    "Invoices for {c} are currently {n} days past due, with a balance of ${n}{d2}.{d2}.",
    "I checked the contract history: the {y0} agreement said {t0}, but it was superseded in {y}.",
    "If you need the {p} applied, I can prepare a credit note for your approval.",
    "The customer's account manager confirmed the {p} by email on {m} {d}.",
    "Shipments are invoiced on delivery, and the {p} is reviewed each quarter.",
    "Note that the {p} does not apply to freight, taxes or returned goods.",
    "Please let me know if you would like a summary of all open invoices for {c}.",
]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "September", "October"]
TYPOGRAPHIC = [("'", "\u2019"), ('"', "\u201c"), (" - ", " \u2014 "), (" ", "\u00a0")]


def make_answer(rng: random.Random) -> str:
    parts: list[str] = []
    size = 0
    while size < 1000:
        sentence = rng.choice(SENTENCES).format(
            c=rng.choice(CUSTOMERS),
            t=rng.choice(TERMS),
            t0=rng.choice(TERMS),
            y=rng.choice((2025, 2026)),
            y0=2024,
            p=rng.choice(PHRASES),
            m=rng.choice(MONTHS),
            d=rng.randint(1, 28),
            d2=rng.randint(10, 99),
            s=rng.randint(2, 14),
            n=rng.randint(2, 120),
        )
        parts.append(sentence)
        size += len(sentence) + 1
        if rng.random() < 0.15:
            parts.append("\n\n")
    text = " ".join(parts)
    # Real model output mixes in typographic punctuation; ~30% of answers here.
    if rng.random() < 0.3:
        plain, fancy = rng.choice(TYPOGRAPHIC)
        text = text.replace(plain, fancy, rng.randint(1, 6))
        text += " That\u2019s the \u201ccurrent\u201d position \u2014 as of 2026."
    return text


def make_response(rng: random.Random) -> dict:
    calls = [{"name": rng.choice(TOOLS), "arguments": {"q": "x"}} for _ in range(rng.randint(0, 3))]
    response: dict = {
        "answer": make_answer(rng),
        "citations": rng.sample(DOCS, rng.randint(0, 3)),
        "toolCalls": calls,
    }
    if rng.random() < 0.5:
        response["steps"] = rng.randint(0, 5)
    if rng.random() < 0.3:
        response["abstained"] = False
    return response


def make_behaviour(rng: random.Random) -> dict:
    options = [
        {"callsTool": [rng.choice(TOOLS)]},
        {"neverCallsTool": [rng.choice(TOOLS)]},
        {"maxSteps": rng.randint(1, 4)},
        {"abstains": False},
        {"asksClarification": False, "maxSteps": 3},
        {"abstains": False, "neverCallsTool": ["apply_credit"]},
    ]
    return {"kind": "behaviour", "value": rng.choice(options), "why": "bench"}


def make_text_expectation(rng: random.Random, modes: tuple[str, ...]) -> dict:
    kind = rng.choice(("must-contain", "must-contain", "must-not-contain"))
    match = rng.choice(modes)
    if match == "exact":
        value = rng.choice(CUSTOMERS + TERMS)
    elif match == "fuzzy":
        value = rng.choice(PHRASES)
        if rng.random() < 0.5:  # a typo the fuzzy mode is there to forgive
            i = rng.randrange(len(value))
            value = value[:i] + value[i + 1 :]
    else:
        value = rng.choice(TERMS + PHRASES + [str(rng.randint(10, 99)), "2026"])
    exp = {"kind": kind, "value": value, "match": match, "why": "bench"}
    if match == "fuzzy" and rng.random() < 0.5:
        exp["threshold"] = rng.choice((80, 85, 90, 95))
    return exp


def make_case(rng: random.Random, modes: tuple[str, ...]) -> list[dict]:
    exps = [make_text_expectation(rng, modes) for _ in range(rng.randint(1, 2))]
    exps.append({"kind": "must-cite", "documentId": rng.choice(DOCS), "why": "bench"})
    exps.append(make_behaviour(rng))
    if rng.random() < 0.5:
        exps.append(make_text_expectation(rng, modes))
    rng.shuffle(exps)
    return exps[:4]


# --- the floor: bare operations, with nothing the engine adds (no shape check,
# --- no boundary check, no result objects, no details) -------------------------

_REFUSAL = tuple(normalize(p) for p in DEFAULT_REFUSAL_PHRASES)
_CLARIFY = tuple(normalize(p) for p in DEFAULT_CLARIFICATION_PHRASES)


def floor_ops(expectations: list[dict]) -> Callable[[dict], bool]:
    ops: list[Callable[[dict, str], bool]] = []
    uses_norm = False
    for exp in expectations:
        kind = exp["kind"]
        if kind == "must-cite":
            doc = exp["documentId"]
            ops.append(lambda r, n, doc=doc: doc in set(r.get("citations", ())))
        elif kind == "behaviour":
            for key, want in exp["value"].items():
                if key in ("callsTool", "neverCallsTool"):
                    ops.append(lambda r, n, w=want: {c["name"] for c in r.get("toolCalls", ())}.isdisjoint(w))
                elif key == "maxSteps":
                    ops.append(lambda r, n, w=want: r.get("steps", len(r.get("toolCalls", ()))) <= w)
                elif key == "abstains":
                    uses_norm = True
                    ops.append(lambda r, n: r["abstained"] if "abstained" in r else any(p in n for p in _REFUSAL))
                elif key == "asksClarification":
                    uses_norm = True
                    ops.append(
                        lambda r, n: (
                            r["askedClarification"]
                            if "askedClarification" in r
                            else "?" in n and any(p in n for p in _CLARIFY)
                        )
                    )
        else:
            match = exp.get("match", "normalized")
            value = exp["value"]
            if match == "exact":
                ops.append(lambda r, n, v=value: r["answer"].find(v) >= 0)
            elif match == "fuzzy":
                uses_norm = True
                v = normalize(value)
                t = exp.get("threshold", 90)
                ops.append(lambda r, n, v=v, t=t: fuzz.partial_ratio(v, n) >= t)
            else:
                uses_norm = True
                v = normalize(value)
                ops.append(lambda r, n, v=v: n.find(v) >= 0)
    ops_t = tuple(ops)

    def run(response: dict) -> bool:
        n = normalize(response["answer"]) if uses_norm else ""
        ok = True
        for op in ops_t:
            ok = op(response, n) and ok
        return ok

    return run


def timed(fn: Callable[[list], None], chunk: list) -> float:
    start = time.perf_counter()
    fn(chunk)
    return time.perf_counter() - start


def run_engine(pairs: list) -> None:
    for case, response in pairs:
        case.score(response)


def run_floor(pairs: list) -> None:
    for op, response in pairs:
        op(response)


def run_mix(name: str, modes: tuple[str, ...], responses: list[dict], args: argparse.Namespace) -> None:
    rng = random.Random(args.seed + len(modes))
    cases = [make_case(rng, modes) for _ in range(args.cases)]
    assignment = [rng.randrange(args.cases) for _ in responses]
    compiled = [compile_case(c) for c in cases]
    floors = [floor_ops(c) for c in cases]
    pairs_engine = [(compiled[i], r) for i, r in zip(assignment, responses, strict=True)]
    pairs_floor = [(floors[i], r) for i, r in zip(assignment, responses, strict=True)]
    n_exp = sum(len(cases[i]) for i in assignment) / len(assignment)
    passed = sum(case.score(r).passed for case, r in pairs_engine[:5000])
    print(f"{name} mix: {args.cases} cases, {n_exp:.2f} expectations/case, {passed / 50:.1f}% of 5,000 pass")

    # Engine and floor run alternately on the same chunks, each chunk several
    # times, keeping the fastest time per chunk: both sides then see the same
    # machine conditions and a burst of background load does not skew the ratio.
    size = 5_000
    engine_s = floor_s = 0.0
    gc.collect()
    gc.disable()
    try:
        for lo in range(0, len(responses), size):
            e_chunk, f_chunk = pairs_engine[lo : lo + size], pairs_floor[lo : lo + size]
            e_best = f_best = float("inf")
            for _ in range(args.repeat):
                e_best = min(e_best, timed(run_engine, e_chunk))
                f_best = min(f_best, timed(run_floor, f_chunk))
            engine_s += e_best
            floor_s += f_best
    finally:
        gc.enable()
    n = len(responses)
    for label, seconds in (("engine", engine_s), ("floor", floor_s)):
        print(f"  {label:8s} {n / seconds:>10,.0f} responses/s  ({seconds * 1e6 / n:6.2f} us/response)")
    print(f"  engine/floor time ratio {engine_s / floor_s:.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="number of responses (default 100000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cases", type=int, default=200, help="number of distinct cases")
    parser.add_argument("--repeat", type=int, default=3, help="timings per chunk; the fastest is kept")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    responses = [make_response(rng) for _ in range(args.n)]
    avg = sum(len(r["answer"]) for r in responses) / len(responses)
    ascii_share = sum(r["answer"].isascii() for r in responses) / len(responses)
    print(
        f"{args.n:,} responses, answers {avg:.0f} chars on average, {ascii_share:.0%} pure ASCII "
        f"(generated in {time.perf_counter() - t0:.1f}s); Python {sys.version.split()[0]}"
    )
    run_mix("normalized", ("normalized",), responses, args)
    run_mix("mixed", ("normalized", "normalized", "exact", "fuzzy"), responses, args)


if __name__ == "__main__":
    main()
