"""The bundled demo target (cases/demo/retrieval.py) and the sample cases beside it.

Plain tests with no Django or database:
    .venv/bin/python -m pytest -p no:django -q tests/test_demo_retrieval.py
"""

import json
import re
from pathlib import Path

import pytest

from cases.demo import retrieval
from cases.demo.retrieval import answer, load_index

DEMO_DIR = Path(retrieval.__file__).resolve().parent
CORPUS_DIR = DEMO_DIR / "corpus"
CASES_FILE = DEMO_DIR / "cases.jsonl"

NORTHLINE_QUESTION = "What are Northline's payment terms?"
UNRELATED_QUESTION = "What is the capital of Mongolia?"
QUESTIONS = [
    NORTHLINE_QUESTION,
    UNRELATED_QUESTION,
    "My order arrived late. Can you apply a freight credit to our account?",
    "How long do customers have to return unused items?",
    "",
]
SEEDS = range(1, 21)

RESPONSE_KEYS = {
    "answer",
    "citations",
    "toolCalls",
    "steps",
    "abstained",
    "askedClarification",
    "requestedConfirmation",
    "retrieved",
}
CASE_KEYS = {
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
}
REQUIRED_CASE_KEYS = {"id", "question", "tags", "expectations"}


def contains_token(text: str, value: str) -> bool:
    """value occurs in text at token boundaries, as scoring.md matches numbers."""
    pattern = rf"(?<![0-9a-z]){re.escape(value)}(?![0-9a-z])"
    return re.search(pattern, text.lower()) is not None


def assert_response_shape(response: dict) -> None:
    assert set(response) <= RESPONSE_KEYS
    assert isinstance(response["answer"], str)
    assert isinstance(response["citations"], list)
    assert all(isinstance(c, str) and c for c in response["citations"])
    assert isinstance(response["toolCalls"], list)
    assert all(isinstance(call.get("name"), str) for call in response["toolCalls"])
    assert isinstance(response["steps"], int) and response["steps"] >= 0
    assert isinstance(response["abstained"], bool)
    for flag in ("askedClarification", "requestedConfirmation"):
        assert isinstance(response.get(flag, False), bool)
    assert isinstance(response["retrieved"], list)
    assert all(isinstance(doc_id, str) for doc_id in response["retrieved"])
    if response["abstained"]:
        assert response["citations"] == []
    json.dumps(response)  # it must travel as JSON over the target protocol


def load_cases() -> list[dict]:
    lines = CASES_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_index_loads_every_corpus_document():
    index = load_index(CORPUS_DIR)
    stems = sorted(path.stem for path in CORPUS_DIR.glob("*.md"))

    assert 15 <= len(stems) <= 25
    assert list(index.doc_ids) == stems
    assert {chunk.doc_id for chunk in index.chunks} == set(stems)
    for doc_id in stems:
        positions = [c.index for c in index.chunks if c.doc_id == doc_id]
        assert positions == list(range(len(positions)))


def test_near_miss_documents_are_in_the_corpus():
    index = load_index(CORPUS_DIR)
    for doc_id in (
        "supply-agreement-northline-2024",
        "supply-agreement-northline-2026",
        "freight-credit-policy",
    ):
        assert doc_id in index.doc_ids


def test_chunks_hold_sixty_to_a_hundred_and_fifty_words():
    for chunk in load_index(CORPUS_DIR).chunks:
        words = sum(len(sentence.split()) for sentence in chunk.sentences)
        assert 60 <= words <= 150, (chunk.doc_id, chunk.index, words)


def test_index_is_built_once_per_corpus_path():
    assert load_index(CORPUS_DIR) is load_index(CORPUS_DIR)


def test_normal_answers_northline_terms_from_the_2026_agreement():
    response = answer(NORTHLINE_QUESTION)

    assert response["abstained"] is False
    assert response["citations"] == ["supply-agreement-northline-2026"]
    assert contains_token(response["answer"], "45")
    assert not contains_token(response["answer"], "30")
    assert response["retrieved"][0] == "supply-agreement-northline-2026"


def test_freight_credit_request_is_answered_from_the_freight_credit_policy():
    response = answer(QUESTIONS[2])

    assert response["citations"] == ["freight-credit-policy"]
    assert "account manager" in response["answer"]
    assert response["toolCalls"] == []


def test_disabled_abstains_without_citations():
    response = answer(NORTHLINE_QUESTION, "disabled")

    assert response["abstained"] is True
    assert response["answer"].startswith("I don't know")
    assert response["citations"] == []
    assert response["retrieved"] == []


def test_random_chunk_is_deterministic_per_seed():
    for seed in SEEDS:
        first = answer(NORTHLINE_QUESTION, "random-chunk", seed)
        assert answer(NORTHLINE_QUESTION, "random-chunk", seed) == first


def test_random_chunk_cites_a_different_document_than_normal():
    normal_citation = answer(NORTHLINE_QUESTION)["citations"][0]
    for seed in SEEDS:
        response = answer(NORTHLINE_QUESTION, "random-chunk", seed)
        assert response["abstained"] is False
        assert len(response["citations"]) == 1
        assert response["citations"][0] != normal_citation


def test_random_chunk_depends_on_the_seed():
    answers = {answer(NORTHLINE_QUESTION, "random-chunk", s)["answer"] for s in SEEDS}
    assert len(answers) > 1


def test_unrelated_question_abstains_under_normal():
    response = answer(UNRELATED_QUESTION)

    assert response["abstained"] is True
    assert response["answer"].startswith("I don't know")
    assert response["citations"] == []


def test_unknown_mode_raises_value_error():
    with pytest.raises(ValueError, match="unknown retrieval mode"):
        answer(NORTHLINE_QUESTION, "shuffled")


@pytest.mark.parametrize("mode", retrieval.RETRIEVAL_MODES)
@pytest.mark.parametrize("question", QUESTIONS)
def test_every_response_has_the_spec_shape(mode, question):
    assert_response_shape(answer(question, mode, seed=7))


def test_corpus_dir_selects_another_corpus(tmp_path):
    (tmp_path / "widgets.md").write_text("# Widgets\n\n## Colours\n\nOur widgets come in teal and amber only.\n")
    (tmp_path / "gadgets.md").write_text("# Gadgets\n\n## Sizes\n\nGadgets are sold in one size, which fits all.\n")

    response = answer("Which colours do widgets come in?", corpus_dir=tmp_path)
    assert response["citations"] == ["widgets"]
    assert "teal" in response["answer"]

    sabotaged = answer("Which colours do widgets come in?", "random-chunk", 3, corpus_dir=tmp_path)
    assert sabotaged["citations"] == ["gadgets"]


def test_corpus_file_names_must_be_document_ids(tmp_path):
    (tmp_path / "Bad Name.md").write_text("# Bad\n\nText.\n")
    with pytest.raises(ValueError, match="document id"):
        load_index(tmp_path)


def test_cases_file_lines_are_cases_with_required_keys():
    lines = CASES_FILE.read_text(encoding="utf-8").splitlines()
    assert 8 <= len(lines) <= 14
    for number, line in enumerate(lines, 1):
        case = json.loads(line)
        assert isinstance(case, dict), f"line {number}"
        assert set(case) >= REQUIRED_CASE_KEYS, f"line {number}"
        assert set(case) <= CASE_KEYS, f"line {number}: unknown keys"
        assert case["expectations"], f"line {number}"


def test_every_expectation_says_why():
    for case in load_cases():
        for position, expectation in enumerate(case["expectations"]):
            why = expectation.get("why")
            assert isinstance(why, str) and why.strip(), (case["id"], position)


def test_case_ids_are_unique_slugs():
    ids = [case["id"] for case in load_cases()]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,99}", case_id) for case_id in ids)


def test_cases_cite_documents_that_exist():
    doc_ids = set(load_index(CORPUS_DIR).doc_ids)
    for case in load_cases():
        cited = {e["documentId"] for e in case["expectations"] if e["kind"] == "must-cite"}
        for response in case.get("phrasings", []) + case.get("wrongAnswers", []):
            cited.update(response.get("citations", []))
        assert cited <= doc_ids, case["id"]


def test_sample_cases_carry_phrasings_and_near_misses():
    for case in load_cases():
        assert len(case.get("phrasings", [])) >= 2, case["id"]
        assert case.get("wrongAnswers"), case["id"]
        for response in case["phrasings"] + case["wrongAnswers"]:
            assert isinstance(response["answer"], str)
