"""The one validator of a case in the interchange format (spec/case-format.md).

Import, the ``score`` command, forms, the admin and the services all call
:func:`validate_case`, so a rule lives in exactly one place. Pure Python: no Django.

Every problem is a :class:`FieldError` whose text names the key path and what is wrong,
for example ``expectations[1].kind: 'must-include' is not one of must-contain,
must-not-contain, must-cite, behaviour``. The importer prefixes the line number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# \Z, not $: "$" would also accept a trailing newline.
ID_PATTERN = re.compile(r"\A[a-z0-9][a-z0-9._-]{0,99}\Z")
QUESTION_MAX = 4000
TAG_MAX = 64
# rapidfuzz partial_ratio slows sharply with needle length and can stall on long
# repetitive text (rapidfuzz issue #430), so fuzzy values are capped.
FUZZY_VALUE_MAX = 256
THRESHOLD_MIN, THRESHOLD_MAX, THRESHOLD_DEFAULT = 50, 100, 90

EXPECTATION_KINDS = ("must-contain", "must-not-contain", "must-cite", "behaviour")
MATCH_MODES = ("normalized", "exact", "fuzzy")
SOURCE_KINDS = ("trace", "ticket", "bug-report", "known-hard", "expert", "synthetic")
BEHAVIOUR_BOOL_KEYS = ("abstains", "asksClarification", "requiresConfirmation")
BEHAVIOUR_LIST_KEYS = ("callsTool", "neverCallsTool")
BEHAVIOUR_KEYS = ("abstains", "asksClarification", "callsTool", "neverCallsTool", "requiresConfirmation", "maxSteps")

CASE_KEYS = (
    "id",
    "question",
    "tags",
    "expectations",
    "invariant",
    "source",
    "context",
    "rubric",
    "phrasings",
    "wrongAnswers",
    "version",
    "status",
)
SHORT_FORMAT_KEYS = ("id", "input", "expect_tool", "rubric", "tags")


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _shown(value: Any) -> str:
    """A value as JSON spells it, for messages (null, true, "text")."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if isinstance(value, str):
        text = "'" + text[1:-1] + "'"
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: Any) -> bool:
    """An integer as JSON Schema counts them: 2 and 2.0, but not true or 2.5."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _unknown_keys(obj: dict, allowed: tuple[str, ...], path: str) -> list[FieldError]:
    return [
        FieldError(_join(path, str(key)), f"unknown key (allowed: {', '.join(allowed)})")
        for key in obj
        if key not in allowed
    ]


def _string_list(
    value: Any, path: str, *, non_empty_items: bool = False, max_len: int | None = None
) -> list[FieldError]:
    if not isinstance(value, list):
        return [FieldError(path, f"must be an array of strings, not {_type_name(value)}")]
    errors = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            errors.append(FieldError(f"{path}[{i}]", f"must be a string, not {_type_name(item)}"))
        elif non_empty_items and not item.strip():
            errors.append(FieldError(f"{path}[{i}]", "must not be empty"))
        elif max_len is not None and len(item) > max_len:
            errors.append(FieldError(f"{path}[{i}]", f"is {len(item)} characters; the limit is {max_len}"))
    return errors


def is_blank_why(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip()


def validate_expectation(exp: Any, path: str, *, draft: bool) -> list[FieldError]:
    if not isinstance(exp, dict):
        return [FieldError(path, f"must be an object, not {_type_name(exp)}")]
    kind = exp.get("kind")
    if "kind" not in exp:
        return [FieldError(_join(path, "kind"), f"is required (one of {', '.join(EXPECTATION_KINDS)})")]
    if kind not in EXPECTATION_KINDS:
        return [FieldError(_join(path, "kind"), f"{_shown(kind)} is not one of {', '.join(EXPECTATION_KINDS)}")]
    errors: list[FieldError] = []
    if "why" in exp:
        if not isinstance(exp["why"], str):
            errors.append(FieldError(_join(path, "why"), f"must be a string, not {_type_name(exp['why'])}"))
        elif not exp["why"].strip() and not draft:
            errors.append(FieldError(_join(path, "why"), "must say what the assertion protects (it is empty)"))
    elif not draft:
        errors.append(FieldError(_join(path, "why"), "is required: say what this assertion protects"))

    if kind in ("must-contain", "must-not-contain"):
        errors += _unknown_keys(exp, ("kind", "value", "match", "threshold", "why"), path)
        value = exp.get("value")
        if "value" not in exp:
            errors.append(FieldError(_join(path, "value"), "is required"))
        elif not isinstance(value, str):
            errors.append(FieldError(_join(path, "value"), f"must be a string, not {_type_name(value)}"))
        elif not value.strip():
            # A blank value would match every answer: an assertion that asserts nothing.
            errors.append(FieldError(_join(path, "value"), "must not be empty or blank"))
        match = exp.get("match", "normalized")
        if match not in MATCH_MODES:
            errors.append(FieldError(_join(path, "match"), f"{_shown(match)} is not one of {', '.join(MATCH_MODES)}"))
        if "threshold" in exp:
            threshold = exp["threshold"]
            if match != "fuzzy":
                errors.append(FieldError(_join(path, "threshold"), "is only allowed with match 'fuzzy'"))
            elif not _is_int(threshold):
                errors.append(FieldError(_join(path, "threshold"), f"must be an integer, not {_type_name(threshold)}"))
            elif not THRESHOLD_MIN <= threshold <= THRESHOLD_MAX:
                errors.append(
                    FieldError(_join(path, "threshold"), f"{threshold} is outside {THRESHOLD_MIN}..{THRESHOLD_MAX}")
                )
        if match == "fuzzy" and isinstance(value, str) and len(value) > FUZZY_VALUE_MAX:
            errors.append(
                FieldError(
                    _join(path, "value"),
                    f"is {len(value)} characters; fuzzy values are limited to {FUZZY_VALUE_MAX} "
                    "(use normalized or exact match for longer text)",
                )
            )
    elif kind == "must-cite":
        errors += _unknown_keys(exp, ("kind", "documentId", "why"), path)
        doc = exp.get("documentId")
        if "documentId" not in exp:
            errors.append(FieldError(_join(path, "documentId"), "is required"))
        elif not isinstance(doc, str):
            errors.append(FieldError(_join(path, "documentId"), f"must be a string, not {_type_name(doc)}"))
        elif not doc.strip():
            errors.append(FieldError(_join(path, "documentId"), "must not be empty"))
    else:  # behaviour
        errors += _unknown_keys(exp, ("kind", "value", "why"), path)
        errors += validate_behaviour(exp.get("value"), _join(path, "value"), present="value" in exp)
    return errors


def validate_behaviour(value: Any, path: str, *, present: bool = True) -> list[FieldError]:
    if not present:
        return [FieldError(path, f"is required: an object with at least one of {', '.join(BEHAVIOUR_KEYS)}")]
    if not isinstance(value, dict):
        return [FieldError(path, f"must be an object, not {_type_name(value)}")]
    if not value:
        return [FieldError(path, f"needs at least one of {', '.join(BEHAVIOUR_KEYS)}")]
    errors = _unknown_keys(value, BEHAVIOUR_KEYS, path)
    for key in BEHAVIOUR_BOOL_KEYS:
        if key in value and not isinstance(value[key], bool):
            errors.append(FieldError(_join(path, key), f"must be true or false, not {_type_name(value[key])}"))
    for key in BEHAVIOUR_LIST_KEYS:
        if key in value:
            errors += _string_list(value[key], _join(path, key), non_empty_items=True)
    if "maxSteps" in value:
        steps = value["maxSteps"]
        if not _is_int(steps):
            errors.append(FieldError(_join(path, "maxSteps"), f"must be an integer, not {_type_name(steps)}"))
        elif steps < 0:
            errors.append(FieldError(_join(path, "maxSteps"), f"{steps} is negative; it must be >= 0"))
    return errors


def validate_response(resp: Any, path: str) -> list[FieldError]:
    """A response object (spec: "A response"). Unknown keys are allowed, as in the schema."""
    if not isinstance(resp, dict):
        return [FieldError(path, f"must be an object, not {_type_name(resp)}")]
    errors: list[FieldError] = []
    if "answer" not in resp:
        errors.append(FieldError(_join(path, "answer"), "is required (a string, may be empty)"))
    elif not isinstance(resp["answer"], str):
        errors.append(FieldError(_join(path, "answer"), f"must be a string, not {_type_name(resp['answer'])}"))
    for key in ("citations", "retrieved"):
        if key in resp:
            errors += _string_list(resp[key], _join(path, key))
    if "toolCalls" in resp:
        calls = resp["toolCalls"]
        if not isinstance(calls, list):
            errors.append(FieldError(_join(path, "toolCalls"), f"must be an array, not {_type_name(calls)}"))
        else:
            for i, call in enumerate(calls):
                call_path = f"{_join(path, 'toolCalls')}[{i}]"
                if not isinstance(call, dict):
                    errors.append(FieldError(call_path, f"must be an object, not {_type_name(call)}"))
                elif "name" not in call:
                    errors.append(FieldError(_join(call_path, "name"), "is required"))
                elif not isinstance(call["name"], str):
                    errors.append(
                        FieldError(_join(call_path, "name"), f"must be a string, not {_type_name(call['name'])}")
                    )
    if "steps" in resp:
        steps = resp["steps"]
        if not _is_int(steps):
            errors.append(FieldError(_join(path, "steps"), f"must be an integer, not {_type_name(steps)}"))
        elif steps < 0:
            errors.append(FieldError(_join(path, "steps"), f"{steps} is negative; it must be >= 0"))
    for key in ("abstained", "askedClarification", "requestedConfirmation"):
        if key in resp and not isinstance(resp[key], bool):
            errors.append(FieldError(_join(path, key), f"must be true or false, not {_type_name(resp[key])}"))
    return errors


def validate_case(obj: Any, *, draft: bool = False) -> list[FieldError]:
    """Every problem with ``obj`` as a case; an empty list means it is valid.

    ``draft=True`` relaxes exactly what the spec lets a draft lack: a ``why``, any
    expectation at all, and tags.
    """
    if not isinstance(obj, dict):
        return [FieldError("", f"a case must be a JSON object, not {_type_name(obj)}")]
    errors = _unknown_keys(obj, CASE_KEYS, "")
    for key in ("id", "question", "tags", "expectations"):
        if key not in obj:
            errors.append(FieldError(key, "is required"))

    if "id" in obj:
        case_id = obj["id"]
        if not isinstance(case_id, str):
            errors.append(FieldError("id", f"must be a string, not {_type_name(case_id)}"))
        elif not ID_PATTERN.fullmatch(case_id):
            errors.append(
                FieldError(
                    "id",
                    f"{case_id[:120]!r} is not a valid id (lowercase letters, digits, '.', '_', '-'; "
                    "starts with a letter or digit; at most 100 characters)",
                )
            )
    if "question" in obj:
        question = obj["question"]
        if not isinstance(question, str):
            errors.append(FieldError("question", f"must be a string, not {_type_name(question)}"))
        elif not question.strip():
            errors.append(FieldError("question", "must not be empty"))
        elif len(question) > QUESTION_MAX:
            errors.append(FieldError("question", f"is {len(question)} characters; the limit is {QUESTION_MAX}"))
    if "tags" in obj:
        tags = obj["tags"]
        errors += _string_list(tags, "tags", non_empty_items=True, max_len=TAG_MAX)
        if isinstance(tags, list):
            seen: set[str] = set()
            for i, tag in enumerate(tags):
                if isinstance(tag, str) and tag.strip():
                    if tag in seen:
                        errors.append(FieldError(f"tags[{i}]", f"{_shown(tag)} is listed twice"))
                    seen.add(tag)
            if not tags and not draft:
                errors.append(
                    FieldError("tags", "needs at least one tag outside a draft (tags place a case in a stratum)")
                )
    if "expectations" in obj:
        expectations = obj["expectations"]
        if not isinstance(expectations, list):
            errors.append(FieldError("expectations", f"must be an array, not {_type_name(expectations)}"))
        else:
            if not expectations and not draft:
                errors.append(FieldError("expectations", "needs at least one expectation outside a draft"))
            for i, exp in enumerate(expectations):
                errors += validate_expectation(exp, f"expectations[{i}]", draft=draft)
    if "invariant" in obj and not isinstance(obj["invariant"], bool):
        errors.append(FieldError("invariant", f"must be true or false, not {_type_name(obj['invariant'])}"))
    if "source" in obj:
        source = obj["source"]
        if not isinstance(source, dict):
            errors.append(FieldError("source", f"must be an object, not {_type_name(source)}"))
        else:
            errors += _unknown_keys(source, ("kind", "ref"), "source")
            if "kind" not in source:
                errors.append(FieldError("source.kind", f"is required (one of {', '.join(SOURCE_KINDS)})"))
            elif source["kind"] not in SOURCE_KINDS:
                errors.append(
                    FieldError("source.kind", f"{_shown(source['kind'])} is not one of {', '.join(SOURCE_KINDS)}")
                )
            if "ref" in source and not isinstance(source["ref"], str):
                errors.append(FieldError("source.ref", f"must be a string, not {_type_name(source['ref'])}"))
    if "context" in obj:
        context = obj["context"]
        if not isinstance(context, dict):
            errors.append(FieldError("context", f"must be an object, not {_type_name(context)}"))
        else:
            errors += _unknown_keys(context, ("expectedSources", "allowedTools"), "context")
            for key in ("expectedSources", "allowedTools"):
                if key in context:
                    errors += _string_list(context[key], f"context.{key}")
    if "rubric" in obj:
        errors += _string_list(obj["rubric"], "rubric")
    for key in ("phrasings", "wrongAnswers"):
        if key in obj:
            responses = obj[key]
            if not isinstance(responses, list):
                errors.append(FieldError(key, f"must be an array of responses, not {_type_name(responses)}"))
            else:
                for i, resp in enumerate(responses):
                    errors += validate_response(resp, f"{key}[{i}]")
    if "version" in obj and (not _is_int(obj["version"]) or obj["version"] < 1):
        errors.append(FieldError("version", "must be an integer >= 1"))
    if "status" in obj and not isinstance(obj["status"], str):
        errors.append(FieldError("status", f"must be a string, not {_type_name(obj['status'])}"))
    return errors


def is_short_format(obj: Any) -> bool:
    """A line of the short golden-set format: ``{"id", "input", "expect_tool", "rubric", "tags"}``."""
    return isinstance(obj, dict) and "input" in obj and "question" not in obj


def convert_short_format(obj: dict) -> tuple[dict | None, list[FieldError]]:
    """Turn a short-format line into a case; it has no ``why``, so it can only be a draft."""
    errors = _unknown_keys(obj, SHORT_FORMAT_KEYS, "")
    for key in ("id", "input"):
        if key not in obj:
            errors.append(FieldError(key, "is required"))
    case: dict[str, Any] = {
        "id": obj.get("id"),
        "question": obj.get("input"),
        "tags": obj.get("tags", []),
        "expectations": [],
    }
    tool = obj.get("expect_tool")
    if tool is not None:
        if not isinstance(tool, str) or not tool.strip():
            errors.append(FieldError("expect_tool", "must be a non-empty tool name or null"))
        else:
            case["expectations"].append({"kind": "behaviour", "value": {"callsTool": [tool]}})
    rubric = obj.get("rubric")
    if isinstance(rubric, str):
        rubric = [rubric] if rubric.strip() else []
    if rubric is not None:
        case["rubric"] = rubric
    if errors:
        return None, errors
    return case, []
