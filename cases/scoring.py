"""Deterministic scoring engine: judges one response against one case.

The contract is ``/work/shared/spec/scoring.md`` (how) and ``case-format.md`` (what).
This module is deliberately free of Django and of any database access (stdlib +
rapidfuzz only) so that the ``score`` command, the web layer and the benchmarks all
run the very same code; the Django layer passes a :class:`DetectorConfig` built from
its settings instead of this module reading settings.

Decisions where the spec leaves room (kept here so the code and the report agree):

* "Letter or digit" (token boundaries) means ``str.isalnum()``. Combining marks are
  not letters, so ``x`` is found in ``"x\\u0308"`` when no precomposed form exists.
* ``normalize`` applies the quote/dash/zero-width table *before* NFKC as well as
  after it: NFKC would otherwise turn ``″`` into two primes (``''``, not the ``"`` the
  table promises), and a zero-width character between a letter and its accent would
  block composition. A second NFKC runs after casefold because casefold can undo
  NFKC (``"ß\\u0301"`` -> ``"ss\\u0301"`` must compose to ``"sś"``); without it
  ``normalize`` is not idempotent.
* Whitespace is what ``str.isspace()`` says (this covers no-break and all other
  Unicode spaces, so they need no table entry).
* Refusal/clarification phrases are matched like ``normalized`` must-contain values,
  at token boundaries, so ``"which one"`` does not fire inside ``"which ones"`` and
  phrases never fire inside longer words. The ``"?"`` test is on N(answer), so a
  full-width question mark counts. Phrases that normalise to nothing are ignored.
* A value that normalises to the empty string (e.g. only spaces) trivially occurs.
* ``steps`` accepts integral floats (``2.0``) because JSON Schema's ``integer`` does.
* The fuzzy score comes from ``partial_ratio_alignment(...).score``, which is how
  rapidfuzz defines ``partial_ratio``; one call gives the score and the location.
* ``check_response`` paths are relative to the response; the response itself is ``""``.
* ``threshold`` is ignored unless ``match`` is ``fuzzy`` (the schema accepts it with any match).
* A case with no expectations passes (every one of none passes).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz import fuzz

from cases.validation import validate_expectation, validate_response

__all__ = [
    "DEFAULT_CLARIFICATION_PHRASES",
    "DEFAULT_FUZZY_THRESHOLD",
    "DEFAULT_REFUSAL_PHRASES",
    "CaseScore",
    "CompiledCase",
    "DetectorConfig",
    "ExpectationResult",
    "ResponseError",
    "check_response",
    "compile_case",
    "normalize",
    "score_case",
]

DEFAULT_FUZZY_THRESHOLD = 90

DEFAULT_REFUSAL_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i can't help",
    "i cannot help",
    "i can't answer",
    "i cannot answer",
    "i'm unable to",
    "i am unable to",
    "i don't have",
    "i do not have",
    "not able to",
)

DEFAULT_CLARIFICATION_PHRASES: tuple[str, ...] = (
    "could you clarify",
    "can you clarify",
    "do you mean",
    "could you specify",
    "can you specify",
    "which one",
)

# ---------------------------------------------------------------------------
# N(text)
# ---------------------------------------------------------------------------

_CHAR_MAP: dict[str, str] = {
    # typographic single quotes and the prime
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    # typographic double quotes and the double prime
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u2033": '"',
    # dashes and the minus sign
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    # zero-width characters
    "\u200b": "",
    "\u200c": "",
    "\u200d": "",
    "\u2060": "",
    "\ufeff": "",
}
# str.translate with a dict table costs ~0.25 us per character on non-ASCII text
# (a 1 KB answer: ~300 us); a membership test + replace per table entry is C-speed
# and almost always a miss, so it is ~50x cheaper for the same mapping.
_CHAR_PAIRS: tuple[tuple[str, str], ...] = tuple(_CHAR_MAP.items())

# ASCII whitespace other than the space itself (what str.split() would split on).
_ASCII_WS_OTHER = ("\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f")


def _map_chars(text: str) -> str:
    for char, replacement in _CHAR_PAIRS:
        if char in text:
            text = text.replace(char, replacement)
    return text


def normalize(text: str) -> str:
    """N(text) of scoring.md: NFKC, casefold, ASCII quotes/dashes, no zero-width, one space.

    Idempotent: ``normalize(normalize(t)) == normalize(t)`` for every string.
    """
    if text.isascii():
        # ASCII is NFKC-stable, casefold() == lower() on it, and the table has no
        # ASCII keys, so only case and whitespace remain. Replacing in C is ~30%
        # faster than " ".join(text.split()) on a typical 1 KB answer, same result.
        text = text.lower()
        for ws in _ASCII_WS_OTHER:
            if ws in text:
                text = text.replace(ws, " ")
        while "  " in text:
            text = text.replace("  ", " ")
        return text.strip(" ")
    mapped = _map_chars(text)
    # normalize() returns its argument after a quick check when it is already NFKC,
    # so both calls cost little on ordinary text.
    text = unicodedata.normalize("NFKC", mapped)
    changed = text != mapped
    folded = text.casefold()
    text = unicodedata.normalize("NFKC", folded)
    # Only NFKC can bring table characters back (e.g. U+FE58 small em dash ->
    # U+2014, U+2034 triple prime -> three U+2032); casefold never yields one.
    if changed or text != folded:
        text = _map_chars(text)
    return " ".join(text.split())


def _find_token(haystack: str, needle: str, check_start: bool, check_end: bool) -> tuple[int, int]:
    """First occurrence of needle at token boundaries, and first one that was not.

    Returns ``(pos, inner)``: ``pos`` is -1 when there is no occurrence at token
    boundaries; ``inner`` is the first occurrence rejected for touching a letter or
    digit (-1 when none), which the details show to reviewers.
    """
    pos = haystack.find(needle)
    if pos < 0 or not (check_start or check_end):
        return pos, -1
    size = len(needle)
    length = len(haystack)
    inner = -1
    while pos >= 0:
        if (not check_start or pos == 0 or not haystack[pos - 1].isalnum()) and (
            not check_end or pos + size >= length or not haystack[pos + size].isalnum()
        ):
            return pos, inner
        if inner < 0:
            inner = pos
        # Occurrences may overlap ("aa" in "aaa"), so step by one, not by size.
        pos = haystack.find(needle, pos + 1)
    return -1, inner


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExpectationResult:
    kind: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class CaseScore:
    passed: bool
    invariant: bool
    results: tuple[ExpectationResult, ...]

    def to_dict(self, case_id: str) -> dict[str, Any]:
        """The ``score`` command's output line (key order is part of the contract)."""
        return {
            "caseId": case_id,
            "passed": self.passed,
            "invariant": self.invariant,
            "results": [r.to_dict() for r in self.results],
        }


@dataclass(frozen=True)
class DetectorConfig:
    """Phrase lists of the abstention and clarification detectors.

    Phrases are compared after :func:`normalize` on both sides, so case, quote style
    and spacing in them do not matter.
    """

    refusal_phrases: tuple[str, ...] = DEFAULT_REFUSAL_PHRASES
    clarification_phrases: tuple[str, ...] = DEFAULT_CLARIFICATION_PHRASES

    def __post_init__(self) -> None:
        for name in ("refusal_phrases", "clarification_phrases"):
            phrases = getattr(self, name)
            # tuple("i don't know") would silently make every letter a phrase.
            if isinstance(phrases, str) or not all(isinstance(p, str) for p in phrases):
                raise TypeError(f"DetectorConfig.{name} must be a sequence of strings")
            # Settings are often lists; the config must stay hashable (it is cached).
            object.__setattr__(self, name, tuple(phrases))


# A frozen dataclass's __init__ goes through object.__setattr__ once per field
# (~0.8 us per result); the slot descriptors store the same fields directly at
# about half the cost. Only the engine's hot path uses these; instances are
# indistinguishable from ones built by the constructors.
_new = object.__new__
_set_kind = ExpectationResult.kind.__set__  # type: ignore[attr-defined]
_set_passed = ExpectationResult.passed.__set__  # type: ignore[attr-defined]
_set_detail = ExpectationResult.detail.__set__  # type: ignore[attr-defined]
_set_case_passed = CaseScore.passed.__set__  # type: ignore[attr-defined]
_set_invariant = CaseScore.invariant.__set__  # type: ignore[attr-defined]
_set_results = CaseScore.results.__set__  # type: ignore[attr-defined]


def _result(kind: str, passed: bool, detail: str) -> ExpectationResult:
    result = _new(ExpectationResult)
    _set_kind(result, kind)
    _set_passed(result, passed)
    _set_detail(result, detail)
    return result


def _case_score(passed: bool, invariant: bool, results: tuple[ExpectationResult, ...]) -> CaseScore:
    score = _new(CaseScore)
    _set_case_passed(score, passed)
    _set_invariant(score, invariant)
    _set_results(score, results)
    return score


class ResponseError(ValueError):
    """A response that does not have the shape case-format.md gives it."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__(
            "invalid response: " + "; ".join(f"{path or '(response)'}: {msg}" for path, msg in self.errors)
        )


# ---------------------------------------------------------------------------
# Response shape
# ---------------------------------------------------------------------------


def check_response(obj: object) -> list[tuple[str, str]]:
    """Every problem of a response object, as ``(key path, message)`` pairs.

    Paths are relative to the response (``"toolCalls[1].name"``); a problem with the
    response itself has the empty path ``""``. The rules are the interchange
    validator's (one implementation for import, targets and scoring). Never raises;
    an empty list means the response is usable.
    """
    return [(e.path, e.message) for e in validate_response(obj, "")]


# ---------------------------------------------------------------------------
# Detail helpers (details are read by people: short, concrete, with context)
# ---------------------------------------------------------------------------

_EXCERPT_CONTEXT = 30
_VALUE_LIMIT = 60


def _flatten(text: str) -> str:
    # An excerpt of a raw answer may hold line breaks; a detail is one line.
    for ch in ("\r\n", "\n", "\r", "\t"):
        if ch in text:
            text = text.replace(ch, " ")
    return text


def _show(value: str, limit: int = _VALUE_LIMIT) -> str:
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return '"' + _flatten(value) + '"'


def _excerpt(text: str, start: int, end: int) -> str:
    lo = max(0, start - _EXCERPT_CONTEXT)
    hi = min(len(text), end + _EXCERPT_CONTEXT)
    if end - start > 2 * _EXCERPT_CONTEXT:
        # Long match: keep its start and its end, cut the middle.
        middle = text[lo : start + _EXCERPT_CONTEXT] + "…" + text[end - _EXCERPT_CONTEXT : hi]
    else:
        middle = text[lo:hi]
    return '"' + ("…" if lo > 0 else "") + _flatten(middle) + ("…" if hi < len(text) else "") + '"'


def _names(names: Sequence[str], limit: int = 5) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _fmt_score(score: float, threshold: float) -> str:
    text = f"{score:.1f}"
    # Never let rounding show "90.0 < 90": fall back to full precision then.
    if (float(text) >= threshold) != (score >= threshold):
        text = repr(score)
    return text


# ---------------------------------------------------------------------------
# Per-response context: everything derived from a response, computed at most once
# ---------------------------------------------------------------------------


class _Detectors:
    """A DetectorConfig with its phrases normalised once."""

    __slots__ = ("clarification", "clarification_label", "refusal", "refusal_label")

    def __init__(self, config: DetectorConfig) -> None:
        self.refusal = _compile_phrases(config.refusal_phrases)
        self.clarification = _compile_phrases(config.clarification_phrases)
        self.refusal_label = _phrase_list_label(
            "refusal", config.refusal_phrases == DEFAULT_REFUSAL_PHRASES, len(self.refusal)
        )
        self.clarification_label = _phrase_list_label(
            "clarification",
            config.clarification_phrases == DEFAULT_CLARIFICATION_PHRASES,
            len(self.clarification),
        )


def _compile_phrases(phrases: Sequence[str]) -> tuple[tuple[str, bool, bool], ...]:
    out = []
    for phrase in phrases:
        needle = normalize(phrase)
        if needle:  # an empty phrase would match every answer
            out.append((needle, needle[0].isalnum(), needle[-1].isalnum()))
    return tuple(out)


def _phrase_list_label(what: str, is_default: bool, count: int) -> str:
    return f"{'default' if is_default else 'configured'} {what} list, {count} phrases"


@lru_cache(maxsize=32)
def _detectors_for(config: DetectorConfig) -> _Detectors:
    return _Detectors(config)


def _first_phrase(text: str, phrases: tuple[tuple[str, bool, bool], ...]) -> str | None:
    # The spec says an answer "containing" a phrase: plain containment in N(answer).
    for needle, _, _ in phrases:
        if needle in text:
            return needle
    return None


class _Ctx:
    __slots__ = ("_abstained", "_asked", "_cites", "_norm", "_tools", "answer", "detectors", "response")

    def __init__(self, response: dict, detectors: _Detectors) -> None:
        self.response = response
        self.answer: str = response["answer"]
        self.detectors = detectors
        self._norm: str | None = None
        self._cites: list[str] | None = None
        self._tools: list[str] | None = None
        self._abstained: tuple[bool, str] | None = None
        self._asked: tuple[bool, str] | None = None

    def norm(self) -> str:
        norm = self._norm
        if norm is None:
            norm = self._norm = normalize(self.answer)
        return norm

    def citations(self) -> list[str]:
        cites = self._cites
        if cites is None:
            cites = self._cites = [c.strip() for c in self.response.get("citations", ())]
        return cites

    def tools(self) -> list[str]:
        tools = self._tools
        if tools is None:
            tools = self._tools = [call["name"] for call in self.response.get("toolCalls", ())]
        return tools

    def abstained(self) -> tuple[bool, str]:
        if self._abstained is None:
            explicit = self.response.get("abstained")
            if explicit is not None:
                self._abstained = (explicit, f"explicit field abstained={_tf(explicit)}")
            else:
                norm = self.norm()
                label = self.detectors.refusal_label
                if not norm:
                    self._abstained = (True, "detected: the answer is empty")
                else:
                    phrase = _first_phrase(norm, self.detectors.refusal)
                    if phrase is not None:
                        self._abstained = (True, f"detected refusal phrase {_show(phrase)} ({label})")
                    else:
                        self._abstained = (False, f"no refusal phrase detected ({label})")
        return self._abstained

    def asked(self) -> tuple[bool, str]:
        if self._asked is None:
            explicit = self.response.get("askedClarification")
            if explicit is not None:
                self._asked = (explicit, f"explicit field askedClarification={_tf(explicit)}")
            else:
                norm = self.norm()
                label = self.detectors.clarification_label
                if "?" not in norm:
                    self._asked = (False, 'not detected: no "?" in the answer')
                else:
                    phrase = _first_phrase(norm, self.detectors.clarification)
                    if phrase is not None:
                        self._asked = (True, f'detected "?" and phrase {_show(phrase)} ({label})')
                    else:
                        self._asked = (False, f'not detected: "?" but no clarification phrase ({label})')
        return self._asked


def _tf(value: bool) -> str:
    return "true" if value else "false"


# ---------------------------------------------------------------------------
# Compiled expectations
# ---------------------------------------------------------------------------

Evaluator = Callable[[_Ctx], ExpectationResult]


class _Normalized:
    __slots__ = ("check_end", "check_start", "kind", "needle", "negate", "shown")

    def __init__(self, kind: str, value: str) -> None:
        self.kind = kind
        self.negate = kind == "must-not-contain"
        self.needle = normalize(value)
        self.shown = _show(value)
        self.check_start = bool(self.needle) and self.needle[0].isalnum()
        self.check_end = bool(self.needle) and self.needle[-1].isalnum()

    def evaluate(self, ctx: _Ctx) -> ExpectationResult:
        hay = ctx.norm()
        needle = self.needle
        pos, inner = _find_token(hay, needle, self.check_start, self.check_end)
        if pos >= 0:
            if needle:
                detail = (
                    f"found {self.shown} at char {pos} of the normalised answer: "
                    f"{_excerpt(hay, pos, pos + len(needle))}"
                )
            else:
                detail = f"{self.shown} is empty after normalisation, so it trivially occurs"
            return _result(self.kind, not self.negate, detail)
        detail = f"{self.shown} not found at token boundaries in the normalised answer"
        if inner >= 0:
            detail += f"; only inside a longer token at char {inner}: {_excerpt(hay, inner, inner + len(needle))}"
        return _result(self.kind, self.negate, detail)


class _Exact:
    __slots__ = ("kind", "negate", "shown", "value")

    def __init__(self, kind: str, value: str) -> None:
        self.kind = kind
        self.negate = kind == "must-not-contain"
        self.value = value
        self.shown = _show(value)

    def evaluate(self, ctx: _Ctx) -> ExpectationResult:
        answer = ctx.answer
        pos = answer.find(self.value)
        if pos >= 0:
            detail = f"found {self.shown} (exact) at char {pos}: {_excerpt(answer, pos, pos + len(self.value))}"
            return _result(self.kind, not self.negate, detail)
        detail = f"{self.shown} not found in the raw answer (exact: case, spacing and quotes must match)"
        lowered = answer.lower()
        if len(lowered) == len(answer):  # positions are comparable only then
            near = lowered.find(self.value.lower())
            if near >= 0:
                detail += f"; differs only in case at char {near}: {_excerpt(answer, near, near + len(self.value))}"
        return _result(self.kind, self.negate, detail)


class _Fuzzy:
    __slots__ = ("kind", "needle", "negate", "shown", "threshold")

    def __init__(self, kind: str, value: str, threshold: float) -> None:
        self.kind = kind
        self.negate = kind == "must-not-contain"
        self.needle = normalize(value)
        self.shown = _show(value)
        self.threshold = threshold

    def evaluate(self, ctx: _Ctx) -> ExpectationResult:
        hay = ctx.norm()
        # rapidfuzz defines partial_ratio(s1, s2) as partial_ratio_alignment(s1, s2).score
        # (0 when it returns None), so one alignment call yields the very score the
        # spec names plus where it was found; calling both would double the cost.
        # tests/test_scoring_properties.py checks the two agree.
        where = fuzz.partial_ratio_alignment(self.needle, hay)
        score = where.score if where is not None else 0.0
        found = score >= self.threshold
        shown_score = _fmt_score(score, self.threshold)
        detail = f"{self.shown}: partial_ratio {shown_score} {'>=' if found else '<'} {self.threshold:g}"
        if where is not None and score > 0 and where.dest_end > where.dest_start:
            start = where.dest_start
            detail += f", best match at char {start} of the normalised answer: {_excerpt(hay, start, where.dest_end)}"
        return _result(self.kind, found != self.negate, detail)


class _Cite:
    __slots__ = ("document_id", "shown")

    def __init__(self, document_id: str) -> None:
        self.document_id = document_id.strip()
        self.shown = _show(self.document_id)

    def evaluate(self, ctx: _Ctx) -> ExpectationResult:
        cites = ctx.citations()
        doc = self.document_id
        if doc in cites:
            detail = f"{self.shown} is cited (citation {cites.index(doc) + 1} of {len(cites)})"
            return _result("must-cite", True, detail)
        if not cites:
            return _result("must-cite", False, f"{self.shown} not cited: the response has no citations")
        detail = f"{self.shown} not cited; citations: {_names([_show(c, 40) for c in cites], 3)}"
        folded = doc.casefold()
        for cite in cites:
            if cite.casefold() == folded:
                detail += f" (ids are case-sensitive: {_show(cite, 40)} differs only in case)"
                break
        return _result("must-cite", False, detail)


_BEHAVIOUR_KEYS = ("abstains", "asksClarification", "callsTool", "neverCallsTool", "requiresConfirmation", "maxSteps")


def _behaviour_label(key: str, want: Any) -> str:
    if isinstance(want, bool):
        return f"{key}={_tf(want)}"
    if key == "maxSteps":
        return f"maxSteps={int(want)}"
    return f"{key} [{_names(list(want))}]"


class _Behaviour:
    __slots__ = ("checks",)

    def __init__(self, value: Mapping[str, Any]) -> None:
        # Spec-table order, so details read the same way across cases.
        self.checks: tuple[tuple[str, Any, str], ...] = tuple(
            (k, value[k], _behaviour_label(k, value[k])) for k in _BEHAVIOUR_KEYS if k in value
        )

    def evaluate(self, ctx: _Ctx) -> ExpectationResult:
        parts = []
        all_hold = True
        for key, want, label in self.checks:
            if key == "abstains":
                got, why = ctx.abstained()
                ok = got == want
            elif key == "asksClarification":
                got, why = ctx.asked()
                ok = got == want
            elif key == "callsTool":
                tools = ctx.tools()
                missing = [name for name in want if name not in tools]
                ok = not missing
                why = f"called: {_names(tools)}" if ok else f"not called: {_names(missing)} (called: {_names(tools)})"
            elif key == "neverCallsTool":
                tools = ctx.tools()
                called = [name for name in want if name in tools]
                ok = not called
                why = "none of them called" if ok else f"called: {_names(called)}"
            elif key == "requiresConfirmation":
                requested = ctx.response.get("requestedConfirmation")
                ok = (requested is True) == want
                why = "requestedConfirmation absent" if requested is None else f"requestedConfirmation={_tf(requested)}"
            else:  # maxSteps
                steps = ctx.response.get("steps")
                if steps is None:
                    steps = len(ctx.response.get("toolCalls", ()))
                    why = f"steps={steps}, counted from toolCalls (no steps field)"
                else:
                    why = f"steps={int(steps)} from the steps field"
                ok = steps <= want
            all_hold = all_hold and ok
            parts.append(f"{label} {'holds' if ok else 'FAILS'}: {why}")
        return _result("behaviour", all_hold, "; ".join(parts))


# ---------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------

_TEXT_KEYS = frozenset({"kind", "value", "match", "threshold", "why"})
_CITE_KEYS = frozenset({"kind", "documentId", "why"})
_BEHAVIOUR_KEY_SET = frozenset(_BEHAVIOUR_KEYS)


def _compile_one(index: int, exp: Mapping[str, Any]) -> Evaluator:
    where = f"expectations[{index}]"
    # The shared validator, again: a malformed expectation must never score as if absent.
    problems = validate_expectation(exp, where, draft=True)
    if problems:
        raise ValueError("; ".join(str(p) for p in problems))
    kind = exp["kind"]
    if kind in ("must-contain", "must-not-contain"):
        match = exp.get("match", "normalized")
        if match == "normalized":
            return _Normalized(kind, exp["value"]).evaluate
        if match == "exact":
            return _Exact(kind, exp["value"]).evaluate
        return _Fuzzy(kind, exp["value"], exp.get("threshold", DEFAULT_FUZZY_THRESHOLD)).evaluate
    if kind == "must-cite":
        return _Cite(exp["documentId"]).evaluate
    return _Behaviour(exp["value"]).evaluate


class CompiledCase:
    """A case's expectations with everything response-independent done once."""

    __slots__ = ("_detectors", "_evaluators", "invariant")

    def __init__(self, evaluators: Sequence[Evaluator], *, invariant: bool, detectors: _Detectors) -> None:
        self._evaluators = tuple(evaluators)
        self._detectors = detectors
        self.invariant = invariant

    def __len__(self) -> int:
        return len(self._evaluators)

    def score(self, response: dict[str, Any]) -> CaseScore:
        """Judge one response; raises :class:`ResponseError` if its shape is wrong."""
        errors = check_response(response)
        if errors:
            raise ResponseError(errors)
        ctx = _Ctx(response, self._detectors)
        results = tuple([evaluate(ctx) for evaluate in self._evaluators])
        passed = True
        for result in results:
            if not result.passed:
                passed = False
                break
        return _case_score(passed, self.invariant, results)


def compile_case(
    expectations: Sequence[Mapping[str, Any]],
    *,
    invariant: bool = False,
    config: DetectorConfig | None = None,
) -> CompiledCase:
    """Compile validated expectations (interchange format) for repeated scoring.

    Raises ``ValueError`` naming the key path if an expectation is malformed.
    """
    detectors = _detectors_for(config if config is not None else DetectorConfig())
    evaluators = [_compile_one(i, exp) for i, exp in enumerate(expectations)]
    return CompiledCase(evaluators, invariant=bool(invariant), detectors=detectors)


def score_case(
    expectations: Sequence[Mapping[str, Any]],
    response: dict[str, Any],
    *,
    invariant: bool = False,
    config: DetectorConfig | None = None,
) -> CaseScore:
    """One-off scoring: ``compile_case(...).score(response)``."""
    return compile_case(expectations, invariant=invariant, config=config).score(response)
