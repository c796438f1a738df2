"""``manage.py score --cases CASES.jsonl --responses RESPONSES.jsonl`` (spec/scoring.md).

Prints one JSON line per response line, in order. Needs no database. Exit status 0 when
everything was scored (whatever passed), 2 on bad input: then every error is printed to
stderr naming its file, line and key, and nothing is printed to stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand

from cases import validation
from cases.jsonl import iter_lines, parse_line
from cases.scoring import CompiledCase, compile_case
from cases.scoring_config import detector_config_from_settings
from cases.validation import FieldError

MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_FILE_BYTES = 4 * 1024 * 1024 * 1024


def _read(path: str, errors: list[str]):
    """Yield (line number, parsed object) of a JSONL file; problems go to ``errors``."""
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        errors.append(f"{path}: cannot read the file ({exc.strerror})")
        return
    with stream:
        for line_no, raw, problem in iter_lines(stream, max_line=MAX_LINE_BYTES, max_file=MAX_FILE_BYTES):
            if problem:
                errors.append(f"{path}: {problem}")
                continue
            if not raw.strip():
                continue
            obj, problem = parse_line(raw, line_no)
            if problem:
                errors.append(f"{path}: {problem}")
                continue
            yield line_no, obj


def load_cases(path: str, errors: list[str], config) -> dict[str, CompiledCase]:
    cases: dict[str, CompiledCase] = {}
    first_line: dict[str, int] = {}
    for line_no, obj in _read(path, errors):
        if validation.is_short_format(obj):
            obj, problems = validation.convert_short_format(obj)
        else:
            problems = []
        # Scoring needs no ``why``: a file of drafts scores as well as a release.
        problems = problems or validation.validate_case(obj, draft=True)
        if problems:
            errors.extend(f"{path}: line {line_no}: {p}" for p in problems)
            continue
        case_id = obj["id"]
        if case_id in first_line:
            errors.append(
                f"{path}: line {line_no}: id: {case_id!r} appears again (first on line {first_line[case_id]})"
            )
            continue
        first_line[case_id] = line_no
        cases[case_id] = compile_case(obj["expectations"], invariant=obj.get("invariant", False), config=config)
    return cases


def response_line_problems(obj: Any, known: dict[str, CompiledCase], cases_path: str) -> list[FieldError]:
    if not isinstance(obj, dict):
        return [FieldError("", f"a response line must be a JSON object, not {validation._type_name(obj)}")]
    problems: list[FieldError] = []
    case_id = obj.get("caseId")
    if "caseId" not in obj:
        problems.append(FieldError("caseId", "is required"))
    elif not isinstance(case_id, str):
        problems.append(FieldError("caseId", f"must be a string, not {validation._type_name(case_id)}"))
    elif known is not None and case_id not in known:
        problems.append(FieldError("caseId", f"{case_id!r} is not a case in {cases_path}"))
    if "response" not in obj:
        problems.append(FieldError("response", "is required"))
    else:
        problems += validation.validate_response(obj["response"], "response")
    return problems


class Command(BaseCommand):
    help = "Score responses against cases (JSONL in, JSON lines out). No database needed."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("--cases", required=True, help="cases in the interchange format (JSONL)")
        parser.add_argument("--responses", required=True, help='lines of {"caseId": ..., "response": {...}}')

    def handle(self, *args, **opts):
        errors: list[str] = []
        config = detector_config_from_settings()
        cases = load_cases(opts["cases"], errors, config)
        cases_ok = not errors
        scored: list[tuple[str, dict]] = []
        responses_path = opts["responses"]
        for line_no, obj in _read(responses_path, errors):
            problems = response_line_problems(obj, cases if cases_ok else None, opts["cases"])
            if problems:
                errors.extend(f"{responses_path}: line {line_no}: {p}" for p in problems)
                continue
            scored.append((obj["caseId"], obj["response"]))
        if errors:
            for error in errors:
                self.stderr.write(error)
            sys.exit(2)
        out = sys.stdout
        for case_id, response in scored:
            # ASCII escapes: a lone surrogate quoted from an answer must not break the output.
            out.write(json.dumps(cases[case_id].score(response).to_dict(case_id)) + "\n")
        out.flush()
