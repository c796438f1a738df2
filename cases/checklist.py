"""The five-item checklist: the evidence the app gathers for each item.

| # | item | decided by |
| 1 | every expectation required? | the reviewer, per expectation |
| 2 | fails on a plausible wrong implementation? | automatic: the check discriminates and every wrong answer fails |
| 3 | passes on two different correct phrasings? | automatic: >= 2 phrasings, all pass, pairwise different |
| 4 | independent of a fact likely to change? | the reviewer, helped by volatility hints |
| 5 | exactly one stratum? | automatic |

Pure functions take plain data; ``gather`` loads what one case needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from itertools import combinations
from typing import Any

from rapidfuzz import fuzz

from cases.scoring import CompiledCase, ResponseError, normalize

AUTOMATIC_ITEMS = (2, 3, 5)
TITLES = {
    1: "Would a competent person agree every expectation is required?",
    2: "Does it fail on at least one plausible wrong implementation?",
    3: "Does it pass on at least two different correct phrasings?",
    4: "Is it independent of a fact likely to change this quarter?",
    5: "Does its tag set place it in exactly one stratum?",
}


@dataclass
class Item:
    number: int
    passed: bool | None  # None: the reviewer decides
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return TITLES[self.number]

    @property
    def automatic(self) -> bool:
        return self.number in AUTOMATIC_ITEMS


# -- item 2 and 3: responses scored against the expectations --------------------------


def score_responses(compiled: CompiledCase | None, responses: list[dict]) -> list[dict[str, Any]]:
    rows = []
    for i, response in enumerate(responses):
        row: dict[str, Any] = {"index": i, "answer": response.get("answer", "") if isinstance(response, dict) else ""}
        if compiled is None:
            row.update(passed=None, results=[], error="the expectations are not valid yet")
        else:
            try:
                score = compiled.score(response)
            except ResponseError as exc:
                row.update(passed=None, results=[], error=str(exc))
            else:
                row.update(passed=score.passed, results=[r.to_dict() for r in score.results], error="")
        rows.append(row)
    return rows


def pairwise_similarity(responses: list[dict], limit: float) -> list[dict[str, Any]]:
    """Similarity of every pair of answers (rapidfuzz ratio of N(answer)); at or over
    ``limit`` two phrasings count as one."""
    texts = [normalize(r.get("answer", "")) if isinstance(r, dict) else "" for r in responses]
    return [
        {"a": i, "b": j, "score": round(score, 1), "too_similar": score >= limit}
        for (i, a), (j, b) in combinations(enumerate(texts), 2)
        for score in [fuzz.ratio(a, b)]
    ]


def item_discrimination(check: dict[str, Any] | None, wrong: list[dict[str, Any]]) -> Item:
    wrong_ok = all(row["passed"] is False for row in wrong)
    if check is None:
        return Item(2, False, "no discrimination check has run on this content yet", {"check": None, "wrong": wrong})
    verdict = check.get("verdict") or ""
    good_verdict = verdict in ("discriminates", "holds")
    if not check.get("finished"):
        summary = "the discrimination check is still running"
        passed = False
    elif not good_verdict:
        summary = f"the check's verdict is {verdict}"
        passed = False
    elif not wrong_ok:
        failing = [str(r["index"] + 1) for r in wrong if r["passed"] is not False]
        summary = f"wrong answer(s) {', '.join(failing)} pass the case"
        passed = False
    else:
        summary = f"{verdict}; every wrong answer fails ({len(wrong)})"
        passed = True
    return Item(2, passed, summary, {"check": check, "wrong": wrong})


def item_phrasings(phrasings: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> Item:
    problems = []
    if len(phrasings) < 2:
        problems.append(f"{len(phrasings)} phrasing(s); at least two are needed")
    failing = [str(r["index"] + 1) for r in phrasings if r["passed"] is not True]
    if failing:
        problems.append(f"phrasing(s) {', '.join(failing)} do not pass")
    similar = [f"{p['a'] + 1} and {p['b'] + 1} ({p['score']:.0f})" for p in pairs if p["too_similar"]]
    if similar:
        problems.append(f"phrasings too alike to count twice: {', '.join(similar)}")
    summary = "; ".join(problems) if problems else f"{len(phrasings)} different phrasings, all pass"
    return Item(3, not problems, summary, {"phrasings": phrasings, "pairs": pairs})


# -- item 4: volatility hints ---------------------------------------------------------

MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
HINT_PATTERNS = [
    ("year", re.compile(r"\b(?:19|20)\d{2}\b")),
    (
        "date",
        re.compile(
            rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}|(?:{MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?)\b",
            re.I,
        ),
    ),
    ("quarter", re.compile(r"\b(?:q[1-4]|this quarter|next quarter|last quarter)\b", re.I)),
    ("amount", re.compile(r"(?:[$€£¥]\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:%|percent|usd|eur|gbp|dollars?)\b)", re.I)),
    (
        "time-relative",
        re.compile(
            r"\b(?:current(?:ly)?|latest|now|today|this (?:year|month|week)|recent(?:ly)?|as of|"
            r"at the moment|newest|upcoming)\b",
            re.I,
        ),
    ),
]


def volatility_hints(texts: list[tuple[str, str]], cited: list[str], today: date | None = None) -> list[dict[str, str]]:
    """Words and figures that tend to change: years, dates, amounts, "current", "latest"...

    ``texts`` are (where, text) pairs; ``cited`` are document ids, flagged when they
    carry a year up to this one (a dated document may be superseded).
    """
    hints = []
    for where, text in texts:
        for kind, pattern in HINT_PATTERNS:
            for match in pattern.finditer(text or ""):
                hints.append({"where": where, "kind": kind, "text": match.group(0)})
    this_year = (today or date.today()).year
    for doc in cited:
        for match in re.finditer(r"(?:19|20)\d{2}", doc):
            if int(match.group(0)) <= this_year:
                hints.append({"where": "must-cite", "kind": "dated document", "text": doc})
    return hints


# -- item 5: strata -------------------------------------------------------------------


def matching_strata(tags: list[str], strata: list[tuple[str, list[str]]]) -> list[str]:
    """Names of the strata whose tags the case carries, every one of them."""
    have = set(tags)
    return [name for name, required in strata if required and set(required) <= have]


def item_strata(matched: list[str]) -> Item:
    if len(matched) == 1:
        return Item(5, True, f"exactly one stratum: {matched[0]}", {"strata": matched})
    if not matched:
        return Item(5, False, "no stratum matches these tags", {"strata": matched})
    return Item(5, False, f"{len(matched)} strata match: {', '.join(matched)}", {"strata": matched})
