"""Import and export through the services and the management commands, on real PostgreSQL."""

from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.test import override_settings

from cases import canonical
from cases.models import AuditAction, AuditEvent, Case, CaseVersion
from cases.services import ImportFailed, cases_import, export_lines
from tests.conftest import case_obj, jsonl

pytestmark = pytest.mark.django_db


def import_errors(stream, user, **kwargs) -> list[str]:
    with pytest.raises(ImportFailed) as info:
        cases_import(stream=stream, user=user, **kwargs)
    return info.value.errors


def full_case(case_id: str) -> dict:
    return case_obj(
        case_id,
        invariant=True,
        source={"kind": "ticket", "ref": "SUP-1182"},
        context={"expectedSources": ["supply-agreement-northline-2026"], "allowedTools": ["lookup_invoices"]},
        rubric=["States the term plainly"],
        phrasings=[
            {"answer": "Northline pays on net 45.", "citations": ["supply-agreement-northline-2026"]},
            {
                "answer": "Terms are 45 days net (2026 agreement).",
                "citations": ["supply-agreement-northline-2026"],
                "toolCalls": [{"name": "lookup_invoices", "arguments": {"customer": "northline", "limit": 1.5}}],
            },
        ],
        wrongAnswers=[{"answer": "Net 30.", "citations": ["supply-agreement-northline-2024"]}],
    )


class TestImportWrites:
    def test_draft_import_creates_cases_and_an_imported_event_each(self, expert):
        result = cases_import(stream=jsonl(case_obj("a-1"), case_obj("a-2")), user=expert)
        assert (result.created, result.status) == (2, "draft")
        assert set(Case.objects.values_list("slug", "status", "proposer__username")) == {
            ("a-1", "draft", "expert"),
            ("a-2", "draft", "expert"),
        }
        assert AuditEvent.objects.filter(action=AuditAction.IMPORTED).count() == 2
        assert not CaseVersion.objects.exists()

    def test_accepted_import_writes_version_one_with_hash_of_canonical_content(self, lead):
        cases_import(stream=jsonl(full_case("n-1")), user=lead, status="accepted")
        case = Case.objects.get(slug="n-1")
        version = case.versions.get()
        assert (case.status, case.current_version, version.number) == ("accepted", 1, 1)
        assert version.accepted_by == lead
        content = canonical.content_of_case(case)
        assert json.loads(version.canonical_json) == content
        assert version.content_hash == canonical.sha256_hex(version.canonical_json) == case.content_hash
        event = AuditEvent.objects.get(case=case)
        assert (event.action, event.version, event.actor) == ("imported", 1, lead)

    def test_tags_and_text_with_quotes_commas_braces_and_backslashes_survive(self, expert):
        tags = ['say "hi"', "a,b", "{braces}", "back\\slash", "tab\tin", "NULL", "ünï"]
        question = 'Line one\nline "two" \\N and \\ and tab\t end'
        cases_import(stream=jsonl(case_obj("odd", tags=tags, question=question)), user=expert)
        case = Case.objects.get(slug="odd")
        assert case.tags == tags
        assert case.question == question
        assert case.content_hash == canonical.hash_content(canonical.content_of_case(case))[1]

    def test_only_leads_import_as_accepted(self, expert, reviewer):
        with pytest.raises(PermissionDenied):
            cases_import(stream=jsonl(case_obj()), user=expert, status="accepted")
        with pytest.raises(PermissionDenied):
            cases_import(stream=jsonl(case_obj()), user=reviewer, status="draft")
        assert not Case.objects.exists()

    def test_short_golden_set_format_arrives_as_a_draft_without_why(self, expert):
        line = {
            "id": "refund-tool",
            "input": "Refund order 1182",
            "expect_tool": "issue_refund",
            "rubric": "Confirms the amount first",
            "tags": ["refunds"],
        }
        cases_import(stream=jsonl(line), user=expert)
        case = Case.objects.get(slug="refund-tool")
        assert case.question == "Refund order 1182"
        assert case.expectations == [{"kind": "behaviour", "value": {"callsTool": ["issue_refund"]}}]
        assert case.rubric == ["Confirms the amount first"]
        assert case.status == "draft"

    def test_short_format_cannot_be_proposed_because_the_why_is_missing(self, expert):
        line = {"id": "refund-tool", "input": "Refund order 1182", "expect_tool": "issue_refund", "tags": ["x"]}
        errors = import_errors(jsonl(line), expert, status="proposed")
        assert errors == ["line 1: expectations[0].why: is required: say what this assertion protects"]

    def test_update_replaces_content_and_is_audited(self, expert):
        cases_import(stream=jsonl(case_obj("u-1")), user=expert)
        changed = case_obj("u-1", tags=["payments", "fact", "northline"])
        result = cases_import(stream=jsonl(changed, case_obj("u-2")), user=expert, update=True)
        assert (result.created, result.updated) == (1, 1)
        assert Case.objects.get(slug="u-1").tags == ["payments", "fact", "northline"]
        event = AuditEvent.objects.get(case__slug="u-1", action="tags-changed")
        assert (event.before, event.after) == (["payments", "fact"], ["payments", "fact", "northline"])
        assert event.classification == "neutral" and "northline" in event.reason

    def test_a_relaxing_update_of_an_accepted_case_needs_a_justification(self, lead):
        cases_import(stream=jsonl(case_obj("rel")), user=lead, status="accepted")
        looser = case_obj("rel")
        del looser["expectations"][1]  # drop the must-not-contain
        errors = import_errors(jsonl(looser), lead, status="accepted", update=True)
        assert errors == [
            'line 1: expectations[1]: relaxing change (must-not-contain "30" removed) needs a justification'
        ] or errors[0].startswith("line 1: expectations[1]: relaxing change")
        assert Case.objects.get(slug="rel").current_version == 1
        cases_import(stream=jsonl(looser), user=lead, status="accepted", update=True, justification="30 is gone")
        case = Case.objects.get(slug="rel")
        assert case.current_version == 2
        event = AuditEvent.objects.get(case=case, action="expectation-removed")
        assert (event.classification, event.justification, event.version) == ("relaxing", "30 is gone", 2)

    def test_update_of_an_accepted_case_by_an_expert_is_refused(self, expert, lead):
        cases_import(stream=jsonl(case_obj("acc")), user=lead, status="accepted")
        errors = import_errors(jsonl(case_obj("acc", question="Changed?")), expert, status="draft", update=True)
        assert errors[0].startswith("line 1: id: 'acc' is accepted")
        assert Case.objects.get(slug="acc").question == "What are Northline's payment terms?"


class TestImportErrors:
    """Each bad input names line, key and problem, and imports nothing."""

    def test_spec_example_error_text(self, expert):
        bad = case_obj("x")
        bad["expectations"][1]["kind"] = "must-include"
        errors = import_errors(jsonl(case_obj("ok-1"), case_obj("ok-2"), bad), expert)
        assert errors == [
            "line 3: expectations[1].kind: 'must-include' is not one of must-contain, must-not-contain, must-cite, behaviour"
        ]
        assert not Case.objects.exists()

    def test_every_bad_line_is_reported_not_only_the_first(self, expert):
        a = case_obj("a", question="")
        b = case_obj("b", tags="payments")
        errors = import_errors(jsonl(a, case_obj("good"), b), expert)
        assert errors == [
            "line 1: question: must not be empty",
            "line 3: tags: must be an array of strings, not string",
        ]
        assert not Case.objects.exists()

    def test_bom_crlf_and_blank_lines_are_accepted(self, expert):
        data = (
            b"\xef\xbb\xbf"
            + json.dumps(case_obj("b-1")).encode()
            + b"\r\n\r\n   \n"
            + json.dumps(case_obj("b-2")).encode()
        )
        result = cases_import(stream=io.BytesIO(data), user=expert)
        assert result.created == 2

    def test_invalid_utf8_names_the_line_and_byte(self, expert):
        data = json.dumps(case_obj("u-1")).encode() + b"\n" + b'{"id": "caf\xe9"}\n'
        assert import_errors(io.BytesIO(data), expert) == ["line 2: not valid UTF-8 (byte 0xe9 at byte 12)"]
        assert not Case.objects.exists()

    def test_duplicate_json_keys_are_an_error(self, expert):
        line = b'{"id": "d", "question": "q", "tags": [], "expectations": [], "tags": ["x"]}\n'
        assert import_errors(io.BytesIO(line), expert) == ["line 1: tags: key appears twice in the same object"]

    @pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
    def test_nan_and_infinity_are_refused(self, expert, constant):
        line = (
            f'{{"id": "n", "question": "q", "tags": [], "expectations": [], "phrasings": [{{"answer": "a", "steps": {constant}}}]}}\n'
        ).encode()
        errors = import_errors(io.BytesIO(line), expert)
        assert errors == [f"line 1: {constant} is not a JSON number (NaN and Infinity are not allowed)"]

    def test_broken_json_names_line_and_column(self, expert):
        data = json.dumps(case_obj("a")).encode() + b'\n{"id": "b",\n'
        assert import_errors(io.BytesIO(data), expert) == [
            "line 2: not valid JSON: Expecting property name enclosed in double quotes at column 12"
        ]

    def test_a_line_that_is_not_an_object(self, expert):
        assert import_errors(jsonl([1, 2]), expert) == ["line 1: a case must be a JSON object, not array"]

    def test_unknown_key_is_an_error_so_a_typo_drops_nothing(self, expert):
        bad = case_obj("t")
        bad["expectations"][0]["treshold"] = 80
        errors = import_errors(jsonl(bad), expert)
        assert errors[0].startswith("line 1: expectations[0].treshold: unknown key")

    @override_settings(IMPORT_MAX_LINE_BYTES=2000)
    def test_oversized_line_is_refused_and_the_next_lines_still_checked(self, expert):
        huge = case_obj("big", question="x" * 3000)
        bad = case_obj("bad", tags=[1])
        errors = import_errors(jsonl(case_obj("ok"), huge, bad), expert)
        assert errors == [
            "line 2: line is longer than the limit of 2,000 bytes",
            "line 3: tags[0]: must be a string, not integer",
        ]
        assert not Case.objects.exists()

    @override_settings(IMPORT_MAX_FILE_BYTES=5000)
    def test_oversized_file_is_refused(self, expert):
        stream = jsonl(*[case_obj(f"c-{i}") for i in range(20)])
        errors = import_errors(stream, expert)
        assert errors[-1] == "file: larger than the import limit of 5,000 bytes; nothing was imported"
        assert not Case.objects.exists()

    def test_duplicate_ids_within_the_file(self, expert):
        errors = import_errors(jsonl(case_obj("dup"), case_obj("other"), case_obj("dup")), expert)
        assert errors == ["line 3: id: 'dup' appears again (first on line 1)"]

    def test_duplicate_id_against_existing_cases_unless_update(self, expert):
        cases_import(stream=jsonl(case_obj("exists")), user=expert)
        errors = import_errors(jsonl(case_obj("new-one"), case_obj("exists")), expert)
        assert errors == ["line 2: id: 'exists' already exists (import it as an update to replace it)"]
        assert not Case.objects.filter(slug="new-one").exists()

    def test_an_error_after_a_full_batch_rolls_back_the_written_batch(self, expert, monkeypatch):
        monkeypatch.setattr("cases.services.importing.BATCH_SIZE", 2)
        errors = import_errors(jsonl(case_obj("r-1"), case_obj("r-2"), case_obj("r-3"), {"id": "r-4"}), expert)
        assert errors[0] == "line 4: question: is required"
        assert not Case.objects.exists()
        assert not AuditEvent.objects.exists()

    def test_empty_file(self, expert):
        assert import_errors(io.BytesIO(b""), expert) == ["file: contains no cases"]
        assert import_errors(io.BytesIO(b"\n\n"), expert) == ["file: contains no cases"]

    def test_missing_why_is_fine_in_a_draft_but_not_when_proposed(self, expert):
        no_why = case_obj("w")
        del no_why["expectations"][0]["why"]
        assert import_errors(jsonl(no_why), expert, status="proposed") == [
            "line 1: expectations[0].why: is required: say what this assertion protects"
        ]
        assert cases_import(stream=jsonl(no_why), user=expert).created == 1


class TestExport:
    def test_export_then_import_round_trips_to_identical_hashes(self, lead, expert):
        originals = [
            full_case("rt-1"),
            case_obj("rt-2"),
            case_obj("rt-3", question="Ünïcode “quotes” — and\nnewlines \\ slash"),
        ]
        cases_import(stream=jsonl(*originals), user=lead, status="accepted")
        before = dict(Case.objects.values_list("slug", "content_hash"))
        exported = "".join(export_lines())
        for line in exported.splitlines():
            obj = json.loads(line)
            assert obj["status"] == "accepted" and obj["version"] == 1
        # Import the export into a clean slate under new ids to compare hashes of identical content.
        renamed = exported.replace('"id":"rt-', '"id":"copy-')
        cases_import(stream=io.BytesIO(renamed.encode()), user=lead, status="accepted")
        for slug, digest in before.items():
            copy = Case.objects.get(slug=slug.replace("rt-", "copy-"))
            expected = json.loads(copy.versions.get().canonical_json)
            expected["id"] = slug
            assert canonical.hash_content(expected)[1] == digest

    def test_export_filters_by_status_and_includes_optional_keys_only_when_set(self, lead, expert):
        cases_import(stream=jsonl(full_case("acc-1")), user=lead, status="accepted")
        cases_import(stream=jsonl(case_obj("dr-1")), user=expert)
        accepted = [json.loads(line) for line in export_lines(status="accepted")]
        assert [c["id"] for c in accepted] == ["acc-1"]
        assert accepted[0]["source"] == {"kind": "ticket", "ref": "SUP-1182"}
        assert accepted[0]["phrasings"][1]["toolCalls"][0]["arguments"] == {"customer": "northline", "limit": 1.5}
        drafts = [json.loads(line) for line in export_lines(status="draft")]
        assert drafts == [case_obj("dr-1") | {"invariant": False, "status": "draft"}]


class TestCommands:
    def test_import_command_exits_2_and_prints_every_error_with_file_and_line(self, lead, tmp_path, capsys):
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps(case_obj("a")) + "\n" + json.dumps({"id": "B"}) + "\n")
        with pytest.raises(SystemExit) as info:
            call_command("import_cases", str(path), "--user", "lead")
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert f"{path}: line 2: id: 'B' is not a valid id" in err
        assert f"{path}: line 2: question: is required" in err
        assert not Case.objects.exists()

    def test_import_command_unknown_user_exits_2(self, tmp_path, capsys):
        path = tmp_path / "c.jsonl"
        path.write_text(json.dumps(case_obj("a")) + "\n")
        with pytest.raises(SystemExit) as info:
            call_command("import_cases", str(path), "--user", "nobody")
        assert info.value.code == 2
        assert "no user named 'nobody'" in capsys.readouterr().err

    def test_import_then_export_commands_round_trip(self, lead, tmp_path, capsys):
        path = tmp_path / "c.jsonl"
        path.write_text("".join(json.dumps(full_case(f"c-{i}")) + "\n" for i in range(3)))
        call_command("import_cases", str(path), "--user", "lead", "--status", "accepted")
        assert "imported 3 new" in capsys.readouterr().out
        call_command("export_cases", "--status", "accepted")
        lines = capsys.readouterr().out.splitlines()
        assert [json.loads(line)["id"] for line in lines] == ["c-0", "c-1", "c-2"]
        event = AuditEvent.objects.filter(case__slug="c-0").get()
        assert event.context["interface"] == "cli" and event.context["command"] == "import_cases"
