"""Classify every change to a case as tightening, relaxing or neutral.

The contract is "Audit trail and relaxed assertions" in ``/work/shared/design.md``;
what an expectation means is ``spec/case-format.md`` and ``spec/scoring.md``. Pure
Python (stdlib + :mod:`cases.scoring`, itself Django-free): the services, the forms,
the audit page and the release changelog all call these functions.

The rule is one-sided: a change is **tightening** only when every answer that passes
the new version would also have passed the old one (and a change is **neutral** only
when both accept exactly the same answers). Anything that cannot be shown that way
counts as **relaxing**, so that nobody can weaken a case without a justification.

Text expectations are reasoned about through "finds": the set of answers in which the
value is found. ``must-contain`` passes when found, ``must-not-contain`` when not, so
the same change has opposite effects on the two kinds. Decisions where the spec
leaves room (kept here so the code and the report agree):

* ``exact`` and ``normalized`` are **not** ordered. ``exact`` is case-sensitive, but
  it has no token boundaries, so ``"45"`` is found in ``"450"`` by ``exact`` and not
  by ``normalized`` (the very example of ``scoring.md``). A change between them, in
  either direction and for either kind, is therefore relaxing ("cannot prove
  harmless").
* ``fuzzy`` finds a superset of what ``normalized`` and ``exact`` find (a value that
  occurs scores ``partial_ratio`` 100), so those changes are ordered. For ``exact``
  this ignores Unicode composition across the edge of the value (``"e"`` followed by a
  combining accent in the answer), a case of no practical weight.
* Under ``normalized`` a value is only "extended" when the old value occurs in the new
  one at token boundaries: ``"45"`` -> ``"net 45 days"`` tightens a ``must-contain``;
  ``"45"`` -> ``"450"`` does not (the new value no longer contains ``45`` as a token).
* Under ``fuzzy`` no change of value is provably harmless except one that leaves N(value)
  unchanged: ``partial_ratio`` is not monotone in the value (``"net 45"`` ->
  ``"net 45 days"`` lets ``"net 46 days"`` pass at 90). So a fuzzy value made longer is
  relaxing too.
* Values that differ only in what N() removes (case, spacing, quote style) are neutral
  under ``normalized`` and ``fuzzy``; under ``exact`` any raw difference counts.
* ``threshold`` is ignored unless ``match`` is ``fuzzy`` (as the scorer does); an omitted
  ``match`` is ``normalized`` and an omitted ``threshold`` is 90.
* Behaviour lists are compared as sets (an absent list is an empty one); an absent
  ``maxSteps`` is "no limit". A flipped boolean is relaxing: it changes what is required.
* Tags are compared as sets: reordering them is no change. Reordering expectations is
  no change either (pairing ignores position when the expectations are identical).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cases.scoring import normalize  # N(text) of scoring.md: the very normalisation the scorer uses

__all__ = [
    "NEUTRAL",
    "RELAXING",
    "TIGHTENING",
    "Change",
    "classify_expectation_change",
    "classify_override",
    "classify_retirement",
    "diff_contents",
    "is_relaxing",
    "override_change",
    "retirement_change",
]

TIGHTENING = "tightening"
RELAXING = "relaxing"
NEUTRAL = "neutral"

TEXT_KINDS = ("must-contain", "must-not-contain")
DEFAULT_MATCH = "normalized"
DEFAULT_THRESHOLD = 90
BOOL_KEYS = ("abstains", "asksClarification", "requiresConfirmation")
LIST_KEYS = ("callsTool", "neverCallsTool")
BEHAVIOUR_KEYS = ("abstains", "asksClarification", "callsTool", "neverCallsTool", "requiresConfirmation", "maxSteps")

_QUOTE_LIMIT = 80


@dataclass(frozen=True)
class Change:
    """One classified change between two versions of a case's content."""

    path: str  # "expectations[2]", "tags", "invariant", "status", "checklist[2]"
    action: str  # expectation-added | expectation-removed | expectation-modified | tags-changed
    #              | invariant-changed | retired | override
    before: Any
    after: Any
    classification: str  # tightening | relaxing | neutral
    reason: str
    why: str | None  # the original expectation's why (None for an added one and non-expectations)

    @property
    def relaxing(self) -> bool:
        return self.classification == RELAXING

    @property
    def key(self) -> str:
        """Names one change uniquely (a removed and a modified expectation may share a path)."""
        return f"{self.action}:{self.path}"


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def _q(value: Any) -> str:
    """A value quoted as JSON spells it, shortened for a sentence."""
    if isinstance(value, str):
        if len(value) > _QUOTE_LIMIT:
            value = value[: _QUOTE_LIMIT - 1] + "\u2026"
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _tf(value: Any) -> str:
    return "true" if value is True else "false" if value is False else _q(value)


def _names(items: Iterable[Any]) -> str:
    return ", ".join(str(i) for i in items)


def _without_why(exp: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in exp.items() if k != "why"}


def _combine(parts: Sequence[tuple[str, str]], *, empty: str) -> tuple[str, str]:
    """Any relaxing part makes the whole relaxing (its reason lists only those parts)."""
    relaxing = [r for c, r in parts if c == RELAXING]
    if relaxing:
        return RELAXING, "; ".join(relaxing)
    tightening = [r for c, r in parts if c == TIGHTENING]
    if tightening:
        return TIGHTENING, "; ".join(tightening)
    neutral = [r for _, r in parts]
    return NEUTRAL, "; ".join(neutral) if neutral else empty


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------
# Text expectations (must-contain / must-not-contain)
# ---------------------------------------------------------------------------

# How the set of answers in which the value is *found* changes.
_SAME, _MORE, _LESS, _UNKNOWN = "same", "more", "less", "unknown"


def _found_to_class(kind: str, rel: str) -> str:
    if rel == _SAME:
        return NEUTRAL
    if rel == _UNKNOWN:
        return RELAXING
    more_passes = (rel == _MORE) == (kind == "must-contain")
    return RELAXING if more_passes else TIGHTENING


def _at_token_boundaries(haystack: str, needle: str) -> bool:
    """N(needle) occurs in N(haystack) the way ``normalized`` matching finds it."""
    check_start = bool(needle) and needle[0].isalnum()
    check_end = bool(needle) and needle[-1].isalnum()
    size, length = len(needle), len(haystack)
    pos = haystack.find(needle)
    while pos >= 0:
        if (not check_start or pos == 0 or not haystack[pos - 1].isalnum()) and (
            not check_end or pos + size >= length or not haystack[pos + size].isalnum()
        ):
            return True
        pos = haystack.find(needle, pos + 1)
    return False


def _shape(old: str, new: str) -> str:
    """How the new value relates to the old as text: shortened, longer or changed."""
    if new in old:
        return "shortened"
    if old in new:
        return "longer"
    return "changed"


def _value_relation(mode: str, old: str, new: str) -> tuple[str, str]:
    """(relation of what is found, shape) for a value change under one match mode."""
    if mode == "exact":
        if old == new:
            return _SAME, "same"
        shape = _shape(old, new)
        if shape == "changed" and normalize(old) == normalize(new):
            return _UNKNOWN, "case"
        return {"shortened": _MORE, "longer": _LESS}.get(shape, _UNKNOWN), shape
    n_old, n_new = normalize(old), normalize(new)
    if n_old == n_new:
        return _SAME, "same"
    shape = _shape(n_old, n_new)
    if mode == "fuzzy":
        return _UNKNOWN, shape
    # normalized: a value found at token boundaries implies every whole-token part of it is.
    if _at_token_boundaries(n_new, n_old):
        return _LESS, "longer"
    if _at_token_boundaries(n_old, n_new):
        return _MORE, "shortened"
    return _UNKNOWN, shape


_WHAT_FOLLOWS = {
    ("must-contain", _MORE): "a substring matches more answers",
    ("must-contain", _LESS): "the old value is part of the new one, so fewer answers match",
    ("must-not-contain", _MORE): "a substring matches more answers, so more are rejected",
    ("must-not-contain", _LESS): "it then matches less, so fewer answers are rejected",
}


def _value_reason(kind: str, mode: str, old: str, new: str, rel: str, shape: str) -> str:
    if rel == _SAME:
        return (
            f"{kind} value changed from {_q(old)} to {_q(new)} only in case, spacing or quote style, "
            f"which {mode} matching ignores: same meaning"
        )
    longer = "extended" if kind == "must-contain" else "made longer"
    verb = {"shortened": "shortened", "longer": longer, "changed": "changed", "case": "changed"}[shape]
    head = f"{kind} value {verb} from {_q(old)} to {_q(new)}"
    if rel in (_MORE, _LESS):
        return f"{head} ({_WHAT_FOLLOWS[kind, rel]})"
    if shape == "case":
        return (
            f"{head} (exact matching is case- and spacing-sensitive, so the two match different answers; "
            "cannot prove harmless)"
        )
    if shape == "changed":
        return f"{head} (an unrelated value asserts something else; cannot prove harmless)"
    if mode == "fuzzy":
        return (
            f"{head} (fuzzy scores are not monotone in the value: the two match different answers; "
            "cannot prove harmless)"
        )
    if mode == "exact":  # pragma: no cover - exact shortened/longer is always ordered
        return f"{head} (cannot prove harmless)"
    return (
        f"{head} (the shorter value is not a whole token of the longer one, so the two match "
        "different answers; cannot prove harmless)"
    )


def _matcher(exp: Mapping[str, Any]) -> tuple[str, float | None] | None:
    """(mode, threshold-if-fuzzy) with the defaults applied; None if malformed."""
    mode = exp.get("match", DEFAULT_MATCH)
    if mode not in ("normalized", "exact", "fuzzy"):
        return None
    if mode != "fuzzy":
        return mode, None
    threshold = exp.get("threshold", DEFAULT_THRESHOLD)
    if not _is_number(threshold):
        return None
    return mode, float(threshold)


def _show_matcher(m: tuple[str, float | None]) -> str:
    mode, threshold = m
    return f"fuzzy (threshold {threshold:g})" if mode == "fuzzy" and threshold is not None else mode


def _matcher_relation(old: tuple[str, float | None], new: tuple[str, float | None]) -> str:
    if old == new:
        return _SAME
    (m_old, t_old), (m_new, t_new) = old, new
    if m_old == m_new == "fuzzy":
        assert t_old is not None and t_new is not None
        return _MORE if t_new < t_old else _LESS
    if m_new == "fuzzy":  # normalized/exact -> fuzzy: whatever occurs scores 100
        return _MORE
    if m_old == "fuzzy":
        return _LESS
    return _UNKNOWN  # exact <-> normalized: case-sensitivity against token boundaries


def _matcher_reason(kind: str, old: tuple[str, float | None], new: tuple[str, float | None], rel: str) -> str:
    (m_old, t_old), (m_new, t_new) = old, new
    if rel == _UNKNOWN:
        return (
            f"{kind} match changed from {m_old} to {m_new}: neither is stricter (exact is case-sensitive but "
            'ignores token boundaries, so "45" is found inside "450"; normalized ignores case but needs whole '
            "tokens); cannot prove harmless"
        )
    klass = _found_to_class(kind, rel)
    if kind == "must-contain":
        effect = "looser: more answers pass" if klass == RELAXING else "stricter: fewer answers pass"
    else:
        effect = (
            "stricter: it matches less, so fewer answers are rejected"
            if klass == RELAXING
            else "looser: it matches more, so more answers are rejected"
        )
    if m_old == m_new == "fuzzy":
        verb = "lowered" if rel == _MORE else "raised"
        return f"{kind} fuzzy threshold {verb} from {t_old:g} to {t_new:g} ({effect})"
    return f"{kind} match changed from {_show_matcher(old)} to {_show_matcher(new)} ({effect})"


def _written(exp: Mapping[str, Any], key: str) -> str:
    return _q(exp[key]) if key in exp else "omitted"


def _default_notes(before: Mapping[str, Any], after: Mapping[str, Any], mode: str) -> list[str]:
    """Neutral notes for keys written differently with the same meaning."""
    notes = []
    if before.get("match") != after.get("match"):
        notes.append(
            f"match written as {_written(before, 'match')} before and {_written(after, 'match')} after "
            f"({DEFAULT_MATCH} is the default): same meaning"
        )
    if before.get("threshold") != after.get("threshold"):
        if mode == "fuzzy":
            notes.append(
                f"threshold written as {_written(before, 'threshold')} before and {_written(after, 'threshold')} "
                f"after ({DEFAULT_THRESHOLD} is the default): same meaning"
            )
        else:
            notes.append(f"threshold changed but it is ignored with match {mode}: same meaning")
    return notes


_PREFERENCE = {TIGHTENING: 0, NEUTRAL: 1, RELAXING: 2}


def _classify_text(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, str] | None:
    kind = before["kind"]
    old_v, new_v = before.get("value"), after.get("value")
    m_old, m_new = _matcher(before), _matcher(after)
    if not isinstance(old_v, str) or not isinstance(new_v, str) or m_old is None or m_new is None:
        return None
    if not normalize(old_v) or not normalize(new_v):
        return None  # "trivially occurs" vs "never scores": no ordering to reason with
    parts: list[tuple[str, str]] = []
    m_rel = _matcher_relation(m_old, m_new)
    if m_rel != _SAME:
        parts.append((_found_to_class(kind, m_rel), _matcher_reason(kind, m_old, m_new, m_rel)))
    if old_v != new_v:
        # Old -> new is (value change under the old mode, then mode change) or (mode change,
        # then value change under the new mode); either route that proves tightening suffices,
        # so the value part is judged under whichever mode is more favourable.
        options = []
        for mode in dict.fromkeys((m_old[0], m_new[0])):
            rel, shape = _value_relation(mode, old_v, new_v)
            klass = _found_to_class(kind, rel)
            rank = (_PREFERENCE[klass], rel == _UNKNOWN)  # a definite relation reads better
            options.append((rank, klass, _value_reason(kind, mode, old_v, new_v, rel, shape)))
        _, klass, reason = min(options, key=lambda o: o[0])
        parts.append((klass, reason))
    if all(c == NEUTRAL for c, _ in parts):
        parts = parts + [(NEUTRAL, note) for note in _default_notes(before, after, m_new[0])]
    return _combine(parts, empty="")


# ---------------------------------------------------------------------------
# must-cite
# ---------------------------------------------------------------------------


def _classify_cite(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, str] | None:
    old, new = before.get("documentId"), after.get("documentId")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    if old.strip() == new.strip():
        return NEUTRAL, (
            f"must-cite documentId {_q(old)} -> {_q(new)} differs only in surrounding whitespace, "
            "which scoring trims: same meaning"
        )
    return RELAXING, (
        f"cited document changed from {_q(old.strip())} to {_q(new.strip())} "
        "(a different document; cannot prove it is equivalent)"
    )


# ---------------------------------------------------------------------------
# behaviour
# ---------------------------------------------------------------------------


def _tool_set(value: Any) -> frozenset[Any] | None:
    if value is None:
        return frozenset()
    if not isinstance(value, list | tuple):
        return None
    try:
        return frozenset(value)
    except TypeError:
        return None


def _ordered(items: Iterable[Any], keep: frozenset[Any]) -> list[Any]:
    return [i for i in dict.fromkeys(items) if i in keep]


def _behaviour_key(key: str, old: Any, new: Any, had: bool, has: bool) -> list[tuple[str, str]]:
    if key in BOOL_KEYS:
        if (had and not isinstance(old, bool)) or (has and not isinstance(new, bool)):
            return [(RELAXING, f"behaviour {key} changed from {_q(old)} to {_q(new)} (cannot prove harmless)")]
        if had and not has:
            return [(RELAXING, f"behaviour {key}={_tf(old)} removed (no longer checked)")]
        if has and not had:
            return [(TIGHTENING, f"behaviour {key}={_tf(new)} added (one more condition to meet)")]
        return [
            (
                RELAXING,
                f"behaviour {key} flipped from {_tf(old)} to {_tf(new)} "
                "(it changes what is required; cannot prove harmless)",
            )
        ]
    if key in LIST_KEYS:
        s_old, s_new = _tool_set(old), _tool_set(new)
        if s_old is None or s_new is None:
            return [(RELAXING, f"behaviour {key} changed from {_q(old)} to {_q(new)} (cannot prove harmless)")]
        dropped = _ordered(old or (), s_old - s_new)
        added = _ordered(new or (), s_new - s_old)
        gone = " (key removed)" if had and not has else ""
        if key == "callsTool":
            drop_effect, add_effect = "fewer tools are required", "more tools are required"
        else:
            drop_effect, add_effect = "those tools are allowed again", "more tools are forbidden"
        parts = []
        if dropped:
            parts.append((RELAXING, f"behaviour {key} entries dropped{gone}: {_names(dropped)} ({drop_effect})"))
        if added:
            parts.append((TIGHTENING, f"behaviour {key} entries added: {_names(added)} ({add_effect})"))
        if not parts:
            parts.append((NEUTRAL, f"behaviour {key} rewritten from {_q(old)} to {_q(new)}: same set of tools"))
        return parts
    if key == "maxSteps":
        if (had and not _is_number(old)) or (has and not _is_number(new)):
            return [(RELAXING, f"behaviour maxSteps changed from {_q(old)} to {_q(new)} (cannot prove harmless)")]
        if had and not has:
            return [(RELAXING, f"behaviour maxSteps {old:g} removed (any number of steps allowed)")]
        if has and not had:
            return [(TIGHTENING, f"behaviour maxSteps {new:g} added (a step limit)")]
        if new > old:
            return [(RELAXING, f"behaviour maxSteps raised from {old:g} to {new:g} (more steps allowed)")]
        if new < old:
            return [(TIGHTENING, f"behaviour maxSteps lowered from {old:g} to {new:g} (fewer steps allowed)")]
        return [(NEUTRAL, f"behaviour maxSteps written as {old!r} and {new!r}: same limit")]
    # A key the spec does not know: nothing can be proved about it.
    if had and not has:
        return [(RELAXING, f"behaviour {key} removed (unknown key; cannot prove harmless)")]
    if has and not had:
        return [(RELAXING, f"behaviour {key} added (unknown key; cannot prove harmless)")]
    return [(RELAXING, f"behaviour {key} changed from {_q(old)} to {_q(new)} (unknown key; cannot prove harmless)")]


def _classify_behaviour(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, str] | None:
    old, new = before.get("value"), after.get("value")
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None
    parts: list[tuple[str, str]] = []
    extra = sorted((set(old) | set(new)) - set(BEHAVIOUR_KEYS), key=str)
    for key in (*BEHAVIOUR_KEYS, *extra):
        had, has = key in old, key in new
        if not had and not has:
            continue
        if had and has and old[key] == new[key] and type(old[key]) is type(new[key]):
            continue
        parts.extend(_behaviour_key(key, old.get(key), new.get(key), had, has))
    return _combine(parts, empty="")


# ---------------------------------------------------------------------------
# One expectation
# ---------------------------------------------------------------------------


def _describe(exp: Mapping[str, Any]) -> str:
    kind = exp.get("kind")
    if kind in TEXT_KINDS:
        m = _matcher(exp)
        shown = _show_matcher(m) if m is not None else _q(exp.get("match"))
        return f"{kind} {_q(exp.get('value'))} ({shown})"
    if kind == "must-cite":
        return f"must-cite {_q(exp.get('documentId'))}"
    if kind == "behaviour":
        value = exp.get("value")
        if isinstance(value, dict):
            keys = [k for k in BEHAVIOUR_KEYS if k in value] + sorted(
                (k for k in value if k not in BEHAVIOUR_KEYS), key=str
            )
            shown = []
            for k in keys:
                v = value[k]
                if isinstance(v, bool):
                    shown.append(f"{k}={_tf(v)}")
                elif isinstance(v, list):
                    shown.append(f"{k} [{_names(v)}]")
                else:
                    shown.append(f"{k}={_q(v)}")
            return f"behaviour {{{'; '.join(shown)}}}"
        return f"behaviour {_q(value)}"
    return f"expectation of kind {_q(kind)}"


_REMOVED_EFFECT = {
    "must-contain": "answers no longer need to contain it",
    "must-not-contain": "answers containing it are no longer rejected",
    "must-cite": "answers no longer need to cite it",
    "behaviour": "its conditions are no longer checked",
}


def classify_expectation_change(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> tuple[str, str]:
    """(classification, reason) of one expectation going from ``before`` to ``after``.

    ``None`` on one side is an added (tightening) or removed (relaxing) expectation.
    """
    if before is None and after is None:
        return NEUTRAL, "no change"
    if before is None:
        assert after is not None
        return TIGHTENING, f"{_describe(after)} added (one more condition every answer must meet)"
    if after is None:
        effect = _REMOVED_EFFECT.get(before.get("kind"), "one condition fewer to meet")
        return RELAXING, f"{_describe(before)} removed ({effect})"
    if dict(before) == dict(after):
        return NEUTRAL, "no change"
    kind, new_kind = before.get("kind"), after.get("kind")
    if kind != new_kind:
        return RELAXING, (
            f"kind changed from {kind} to {new_kind}: {_describe(before)} became {_describe(after)} "
            "(a different assertion; cannot prove it is at least as strict)"
        )
    why_changed = before.get("why") != after.get("why")
    if _without_why(before) == _without_why(after):
        return NEUTRAL, "only the why changed (the assertion itself is unchanged)"
    result: tuple[str, str] | None = None
    if kind in TEXT_KINDS:
        result = _classify_text(before, after)
    elif kind == "must-cite":
        result = _classify_cite(before, after)
    elif kind == "behaviour":
        result = _classify_behaviour(before, after)
    if result is None:  # malformed or unknown: nothing can be proved
        result = RELAXING, f"{_describe(before)} changed to {_describe(after)} (cannot prove harmless)"
    klass, reason = result
    if klass == NEUTRAL:
        reason = reason or "written differently with the same meaning"
        if why_changed:
            reason += "; the why changed too"
    return klass, reason


# ---------------------------------------------------------------------------
# Pairing expectations between two versions
# ---------------------------------------------------------------------------


def _canonical(exp: Any) -> str:
    """A key equal for expectations with the same meaning as written (why ignored)."""
    if not isinstance(exp, Mapping):
        return _q(exp)
    kind = exp.get("kind")
    body: Any
    if kind in TEXT_KINDS:
        m = _matcher(exp)
        body = [exp.get("value"), list(m) if m is not None else _without_why(exp)]
    elif kind == "must-cite" and isinstance(exp.get("documentId"), str):
        body = exp["documentId"].strip()
    elif kind == "behaviour" and isinstance(exp.get("value"), dict):
        value = {}
        for key, v in exp["value"].items():
            if key in LIST_KEYS and _tool_set(v) is not None:
                items = sorted(_tool_set(v) or (), key=repr)
                if items:
                    value[key] = items
            else:
                value[key] = v
        body = value
    else:
        body = _without_why(exp)
    try:
        return json.dumps([kind, body], sort_keys=True, default=repr)
    except (TypeError, ValueError):  # pragma: no cover - keys of mixed types
        return repr([kind, body])


def _similarity(before: Mapping[str, Any], after: Mapping[str, Any]) -> float:
    """How alike two expectations of the same kind are; 0 means "pair only by position"."""
    kind = before.get("kind")
    if kind in TEXT_KINDS:
        old, new = before.get("value"), after.get("value")
        if not isinstance(old, str) or not isinstance(new, str):
            return 0.0
        n_old, n_new = normalize(old), normalize(new)
        if n_old == n_new:
            return 4.0
        if n_old and n_new and (n_old in n_new or n_new in n_old):
            return 2.0 + min(len(n_old), len(n_new)) / max(len(n_old), len(n_new))
        return 0.0
    if kind == "must-cite":
        old, new = before.get("documentId"), after.get("documentId")
        return 4.0 if isinstance(old, str) and isinstance(new, str) and old.strip() == new.strip() else 0.0
    if kind == "behaviour":
        old, new = before.get("value"), after.get("value")
        if not isinstance(old, dict) or not isinstance(new, dict):
            return 0.0
        shared = set(old) & set(new)
        if not shared:
            return 0.0
        equal = sum(1 for k in shared if old[k] == new[k])
        return 1.0 + len(shared) / len(set(old) | set(new)) + 0.5 * equal / len(shared)
    return 0.0


def _kind(exp: Any) -> Any:
    return exp.get("kind") if isinstance(exp, Mapping) else None


def _pair(before: Sequence[Any], after: Sequence[Any]) -> dict[int, int]:
    """after index -> before index. Deterministic."""
    pairs: dict[int, int] = {}
    used: set[int] = set()

    def free_before() -> list[int]:
        return [i for i in range(len(before)) if i not in used]

    # 1. identical (why included), then identical in meaning (why ignored), in order.
    for same in (lambda b, a: b == a, lambda b, a: _canonical(b) == _canonical(a)):
        for ai, a in enumerate(after):
            if ai in pairs:
                continue
            for bi in free_before():
                if same(before[bi], a):
                    pairs[ai] = bi
                    used.add(bi)
                    break
    # 2. same kind, most alike first (ties: nearest position, then order).
    candidates = []
    for ai, a in enumerate(after):
        if ai in pairs or not isinstance(a, Mapping):
            continue
        for bi in free_before():
            b = before[bi]
            if isinstance(b, Mapping) and _kind(b) == _kind(a):
                score = _similarity(b, a)
                if score > 0:
                    candidates.append((-score, abs(ai - bi), ai, bi))
    for _, _, ai, bi in sorted(candidates):
        if ai not in pairs and bi not in used:
            pairs[ai] = bi
            used.add(bi)
    # 3. what is left of a kind pairs up by position; the rest was added or removed.
    for ai, a in enumerate(after):
        if ai in pairs or not isinstance(a, Mapping):
            continue
        for bi in free_before():
            if isinstance(before[bi], Mapping) and _kind(before[bi]) == _kind(a):
                pairs[ai] = bi
                used.add(bi)
                break
    return pairs


def _why_of(exp: Any) -> str | None:
    why = exp.get("why") if isinstance(exp, Mapping) else None
    return why if isinstance(why, str) else None


def _expectation_changes(before: Sequence[Any], after: Sequence[Any]) -> list[Change]:
    pairs = _pair(before, after)
    changes = []
    for ai, a in enumerate(after):
        bi = pairs.get(ai)
        path = f"expectations[{ai}]"
        if bi is None:
            klass, reason = classify_expectation_change(None, a if isinstance(a, Mapping) else {"kind": None})
            changes.append(Change(path, "expectation-added", None, a, klass, reason, None))
            continue
        b = before[bi]
        if b == a:
            continue
        if isinstance(b, Mapping) and isinstance(a, Mapping):
            klass, reason = classify_expectation_change(b, a)
        else:  # pragma: no cover - malformed content
            klass, reason = RELAXING, f"expectation changed from {_q(b)} to {_q(a)} (cannot prove harmless)"
        changes.append(Change(path, "expectation-modified", b, a, klass, reason, _why_of(b)))
    paired = set(pairs.values())
    for bi, b in enumerate(before):
        if bi not in paired:
            klass, reason = classify_expectation_change(b if isinstance(b, Mapping) else {"kind": None}, None)
            changes.append(Change(f"expectations[{bi}]", "expectation-removed", b, None, klass, reason, _why_of(b)))
    return changes


# ---------------------------------------------------------------------------
# Whole contents
# ---------------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _tags_change(before: Any, after: Any) -> Change | None:
    old, new = _list(before), _list(after)
    added = [t for t in dict.fromkeys(new) if t not in old]
    removed = [t for t in dict.fromkeys(old) if t not in new]
    if not added and not removed:
        return None
    said = []
    if added:
        said.append(f"added {_names(added)}")
    if removed:
        said.append(f"removed {_names(removed)}")
    reason = f"tags changed: {'; '.join(said)} (tags move the case between strata, not its strictness)"
    return Change("tags", "tags-changed", old, new, NEUTRAL, reason, None)


def _invariant_change(before: Any, after: Any) -> Change | None:
    old, new = before is True, after is True
    if old == new:
        return None
    if old:
        return Change(
            "invariant",
            "invariant-changed",
            True,
            False,
            RELAXING,
            "invariant turned off (a failure no longer turns a run red on its own)",
            None,
        )
    return Change(
        "invariant",
        "invariant-changed",
        False,
        True,
        TIGHTENING,
        "invariant turned on (must hold under every configuration; a failure turns a run red)",
        None,
    )


def classify_retirement() -> tuple[str, str]:
    return RELAXING, "case retired (nothing it asserts is checked in later releases)"


def retirement_change(before_status: Any = None) -> Change:
    klass, reason = classify_retirement()
    return Change("status", "retired", before_status, "retired", klass, reason, None)


def classify_override(item: int, reason: str) -> tuple[str, str]:
    text = " ".join(str(reason).split()) or "(no reason given)"
    return RELAXING, f"automatic checklist item {item} overridden: {text}"


def override_change(item: int, reason: str) -> Change:
    """The audit form of an override: ``after`` is the reviewer's written reason."""
    klass, text = classify_override(item, reason)
    return Change(f"checklist[{item}]", "override", None, reason, klass, text, None)


def diff_contents(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Every classified change from one version of a case's content to another.

    Contents are interchange case objects. Order: expectations by their position in
    ``after`` (modified and added), then removed expectations by their old position,
    then tags, ``invariant`` and a retirement (``status`` becoming ``retired``).
    """
    before = before or {}
    after = after or {}
    changes = _expectation_changes(_list(before.get("expectations")), _list(after.get("expectations")))
    tags = _tags_change(before.get("tags"), after.get("tags"))
    if tags is not None:
        changes.append(tags)
    invariant = _invariant_change(before.get("invariant", False), after.get("invariant", False))
    if invariant is not None:
        changes.append(invariant)
    if after.get("status") == "retired" and before.get("status") != "retired":
        changes.append(retirement_change(before.get("status")))
    return changes


def is_relaxing(changes: Iterable[Change]) -> bool:
    return any(c.classification == RELAXING for c in changes)
