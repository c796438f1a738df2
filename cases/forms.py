"""The case editor's form: flat POST fields <-> a case in the interchange format.

The editor posts every row of the expectation, phrasing and wrong-answer lists as
indexed fields (``exp-3-kind``...). Rows are added and removed in place by htmx
posting the whole form back, so the editor keeps no state on the server until saved.
Validation is the shared validator's; its key paths map back to the fields here.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.http import QueryDict

from cases.models import SABOTAGE_MODES, Target
from cases.validation import EXPECTATION_KINDS, SOURCE_KINDS

BEHAVIOUR_FLAGS = (("abstains", "abstains"), ("asksClarification", "asks"), ("requiresConfirmation", "confirm"))


def _split(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"[,\n]", text or "") if part.strip()]


def _rows(post: QueryDict, prefix: str) -> list[str]:
    """Row keys in their order on the page (each row posts a hidden ``<prefix>-row``)."""
    return post.getlist(f"{prefix}-row")


def _tri(value: str) -> bool | None:
    return {"true": True, "false": False}.get(value)


def expectation_from_post(post: QueryDict, key: str) -> dict[str, Any]:
    get = lambda name: post.get(f"exp-{key}-{name}", "")  # noqa: E731
    kind = get("kind")
    exp: dict[str, Any] = {"kind": kind}
    if kind in ("must-contain", "must-not-contain"):
        exp["value"] = get("value")
        match = get("match") or "normalized"
        if match != "normalized":
            exp["match"] = match
        if match == "fuzzy" and get("threshold").strip():
            raw = get("threshold").strip()
            exp["threshold"] = int(raw) if re.fullmatch(r"-?[0-9]{1,6}", raw) else raw
    elif kind == "must-cite":
        exp["documentId"] = get("document").strip()
    elif kind == "behaviour":
        value: dict[str, Any] = {}
        for key_name, field in BEHAVIOUR_FLAGS:
            flag = _tri(get(field))
            if flag is not None:
                value[key_name] = flag
        for key_name, field in (("callsTool", "calls"), ("neverCallsTool", "never")):
            names = _split(get(field))
            if names:
                value[key_name] = names
        steps = get("maxsteps").strip()
        if steps:
            value["maxSteps"] = int(steps) if re.fullmatch(r"[0-9]{1,6}", steps) else steps
        exp["value"] = value
    why = get("why")
    if why.strip():
        exp["why"] = why.strip()
    return exp


def response_from_post(post: QueryDict, prefix: str, key: str) -> dict[str, Any]:
    get = lambda name: post.get(f"{prefix}-{key}-{name}", "")  # noqa: E731
    response: dict[str, Any] = {"answer": get("answer")}
    citations = _split(get("citations"))
    if citations:
        response["citations"] = citations
    tools = _split(get("tools"))
    if tools:
        response["toolCalls"] = [{"name": name} for name in tools]
    return response


def content_from_post(post: QueryDict, *, slug: str | None = None) -> dict[str, Any]:
    content: dict[str, Any] = {
        "id": slug if slug is not None else post.get("id", "").strip(),
        "question": post.get("question", ""),
        "tags": _split(post.get("tags", "")),
        "expectations": [expectation_from_post(post, key) for key in _rows(post, "exp")],
        "invariant": post.get("invariant") == "on",
    }
    source_kind = post.get("source_kind", "")
    if source_kind:
        content["source"] = {"kind": source_kind}
        if post.get("source_ref", "").strip():
            content["source"]["ref"] = post.get("source_ref", "").strip()
    rubric = [line.strip() for line in post.get("rubric", "").splitlines() if line.strip()]
    if rubric:
        content["rubric"] = rubric
    context = {}
    for key, field in (("expectedSources", "expected_sources"), ("allowedTools", "allowed_tools")):
        if _split(post.get(field, "")):
            context[key] = _split(post.get(field, ""))
    if context:
        content["context"] = context
    phrasings = [response_from_post(post, "phr", key) for key in _rows(post, "phr")]
    wrong = [response_from_post(post, "wrong", key) for key in _rows(post, "wrong")]
    if phrasings:
        content["phrasings"] = phrasings
    if wrong:
        content["wrongAnswers"] = wrong
    return content


def editor_rows(content: dict[str, Any]) -> dict[str, Any]:
    """Template-friendly rows for a content object (the reverse of content_from_post)."""

    def tri(value: Any) -> str:
        return "" if value is None else ("true" if value else "false")

    expectations = []
    for i, exp in enumerate(content.get("expectations", [])):
        value = exp.get("value") if isinstance(exp.get("value"), dict) else {}
        expectations.append(
            {
                "key": str(i),
                "kind": exp.get("kind", "must-contain"),
                "value": exp.get("value", "") if not isinstance(exp.get("value"), dict) else "",
                "match": exp.get("match", "normalized"),
                "threshold": exp.get("threshold", ""),
                "document": exp.get("documentId", ""),
                "why": exp.get("why", ""),
                "abstains": tri(value.get("abstains")),
                "asks": tri(value.get("asksClarification")),
                "confirm": tri(value.get("requiresConfirmation")),
                "calls": ", ".join(value.get("callsTool", [])),
                "never": ", ".join(value.get("neverCallsTool", [])),
                "maxsteps": value.get("maxSteps", ""),
            }
        )

    def responses(items: list[dict]) -> list[dict[str, str]]:
        return [
            {
                "key": str(i),
                "answer": r.get("answer", ""),
                "citations": ", ".join(r.get("citations", [])),
                "tools": ", ".join(c.get("name", "") for c in r.get("toolCalls", []) if isinstance(c, dict)),
            }
            for i, r in enumerate(items)
        ]

    source = content.get("source") or {}
    context = content.get("context") or {}
    return {
        "id": content.get("id", ""),
        "question": content.get("question", ""),
        "tags": ", ".join(content.get("tags", [])),
        "invariant": content.get("invariant", False),
        "source_kind": source.get("kind", ""),
        "source_ref": source.get("ref", ""),
        "rubric": "\n".join(content.get("rubric", [])),
        "expected_sources": ", ".join(context.get("expectedSources", [])),
        "allowed_tools": ", ".join(context.get("allowedTools", [])),
        "expectations": expectations,
        "phrasings": responses(content.get("phrasings", [])),
        "wrong": responses(content.get("wrongAnswers", [])),
    }


def errors_by_field(problems) -> dict[str, list[str]]:
    """Validator problems keyed for the template: "question", "exp-1-why", "phr-0-answer"..."""
    out: dict[str, list[str]] = {}
    names = {"expectations": "exp", "phrasings": "phr", "wrongAnswers": "wrong"}
    field_names = {
        "documentId": "document",
        "value": "value",
        "why": "why",
        "kind": "kind",
        "match": "match",
        "threshold": "threshold",
        "answer": "answer",
        "citations": "citations",
        "toolCalls": "tools",
    }
    for problem in problems:
        path = problem.path
        m = re.match(r"^(expectations|phrasings|wrongAnswers)\[(\d+)\](?:\.(\w+))?", path)
        if m:
            prefix, index, leaf = names[m.group(1)], m.group(2), m.group(3) or ""
            if leaf == "value" and ".value." in path:
                leaf = "value"
            key = f"{prefix}-{index}-{field_names.get(leaf, leaf) or 'row'}"
        else:
            key = {"id": "id", "source.kind": "source_kind", "source.ref": "source_ref"}.get(
                path, path.split(".")[0].split("[")[0] or "form"
            )
        out.setdefault(key, []).append(problem.message)
    return out


KIND_CHOICES = EXPECTATION_KINDS
SOURCE_CHOICES = SOURCE_KINDS


# The target form of the leads' page and of the admin (one set of rules).
class TargetForm(forms.ModelForm):
    sabotage_modes = forms.MultipleChoiceField(
        choices=[(m, m) for m in SABOTAGE_MODES], widget=forms.CheckboxSelectMultiple, initial=list(SABOTAGE_MODES)
    )
    allowed_hosts = forms.CharField(required=False, help_text="hosts or networks, comma-separated")

    class Meta:
        model = Target
        fields = [
            "name",
            "kind",
            "url",
            "callable_path",
            "sabotage_modes",
            "timeout",
            "retries",
            "concurrency",
            "max_response_bytes",
            "allowed_hosts",
            "is_default",
        ]

    def clean_allowed_hosts(self):
        return [h.strip() for h in self.cleaned_data["allowed_hosts"].split(",") if h.strip()]

    def clean(self):
        data = super().clean()
        if not self.errors:
            from cases.services.checks import validate_target

            for problem in validate_target(Target(**data)):
                self.add_error(None, problem)
        return data
