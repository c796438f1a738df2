"""The canonical content of a case and its hash.

One function turns stored fields into the interchange object, another turns an
interchange object into stored fields; the hash is sha256 over canonical JSON (sorted
keys, no spaces, UTF-8). Optional keys that are empty are left out, so the same content
always hashes the same whichever way it arrived (export then import round-trips).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

# Stored field name -> interchange key, in the order export writes them.
OPTIONAL_KEYS = ("source", "context", "rubric", "phrasings", "wrongAnswers")


class NotCanonical(ValueError):
    """Content JSON cannot represent canonically (e.g. an integer beyond 64 bits)."""


def canonical_bytes(obj: Any) -> bytes:
    # orjson with sorted keys writes exactly what json.dumps(sort_keys=True,
    # separators=(",", ":"), ensure_ascii=False) writes for JSON data, several times faster.
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        raise NotCanonical(str(exc)) from exc


def canonical_json(obj: Any) -> str:
    return canonical_bytes(obj).decode("utf-8")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_from_fields(
    *,
    slug: str,
    question: str,
    tags: list[str],
    expectations: list[dict],
    invariant: bool,
    source_kind: str = "",
    source_ref: str = "",
    context: dict | None = None,
    rubric: list[str] | None = None,
    phrasings: list[dict] | None = None,
    wrong_answers: list[dict] | None = None,
) -> dict[str, Any]:
    content: dict[str, Any] = {
        "id": slug,
        "question": question,
        "tags": list(tags),
        "expectations": expectations,
        "invariant": bool(invariant),
    }
    if source_kind:
        content["source"] = {"kind": source_kind, **({"ref": source_ref} if source_ref else {})}
    if context:
        cleaned = {k: v for k, v in context.items() if v}
        if cleaned:
            content["context"] = cleaned
    if rubric:
        content["rubric"] = list(rubric)
    if phrasings:
        content["phrasings"] = phrasings
    if wrong_answers:
        content["wrongAnswers"] = wrong_answers
    return content


def content_of_case(case) -> dict[str, Any]:
    """The interchange content of a ``Case`` row (without ``version`` / ``status``)."""
    return content_from_fields(
        slug=case.slug,
        question=case.question,
        tags=case.tags,
        expectations=case.expectations,
        invariant=case.invariant,
        source_kind=case.source_kind,
        source_ref=case.source_ref,
        context=case.context,
        rubric=case.rubric,
        phrasings=case.phrasings,
        wrong_answers=case.wrong_answers,
    )


def fields_from_content(obj: dict[str, Any]) -> dict[str, Any]:
    """Stored field values for a validated interchange object."""
    source = obj.get("source") or {}
    return {
        "slug": obj["id"],
        "question": obj["question"],
        "tags": list(obj.get("tags", [])),
        "expectations": obj.get("expectations", []),
        "invariant": bool(obj.get("invariant", False)),
        "source_kind": source.get("kind", ""),
        "source_ref": source.get("ref", ""),
        "context": {k: v for k, v in (obj.get("context") or {}).items() if v},
        "rubric": list(obj.get("rubric", [])),
        "phrasings": obj.get("phrasings", []),
        "wrong_answers": obj.get("wrongAnswers", []),
    }


def hash_content(content: dict[str, Any]) -> tuple[str, str]:
    """(canonical JSON, its sha256) of a content object."""
    data = canonical_bytes(content)
    return data.decode("utf-8"), hashlib.sha256(data).hexdigest()
