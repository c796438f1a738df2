"""The bundled demo target: a small, real retrieval system over the demo corpus.

It speaks the target protocol of ``spec/target-protocol.md`` as a Python callable:
``answer(question, retrieval, seed)`` returns a response object in the format of
``spec/case-format.md``. Retrieval is BM25 over section/paragraph chunks; answers are
extractive (the sentences of the top chunk that best overlap the question), so what
the system says and cites follows directly from what it retrieved. That is what makes
the sabotage modes meaningful for the discrimination check.

Pure standard library on purpose: the demo must work on a fresh machine.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"

RETRIEVAL_MODES = ("normal", "disabled", "random-chunk")

TOP_K = 3
BM25_K1 = 1.5
BM25_B = 0.75
# Below this best BM25 score the question shares no meaningful terms with the corpus.
# The score is counted in units of the idf of a term found in a single chunk, so the
# threshold means the same on a corpus of any size. On the bundled corpus (unit 3.2)
# a few common words ("help", "order", "question") add up to about 1.2 units, one
# specific term ("return") to about 1.5, and real questions score 2.5 and above.
MIN_RELEVANCE = 1.25

MIN_CHUNK_WORDS = 60
MAX_CHUNK_WORDS = 150
MAX_ANSWER_SENTENCES = 2
# A second sentence joins the answer only when it overlaps the question at least this
# much relative to the best sentence, so answers stay short and on point.
SECOND_SENTENCE_RATIO = 0.5

NOTHING_RELEVANT_ANSWER = "I don't know: nothing in the documents I can search covers that."
NO_DOCUMENTS_ANSWER = "I don't know: I have no documents to search."

# A word list reads best as running text, hence split() rather than a list literal.
STOPWORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being
    but by can could did do does doing for from had has have having he her here hers
    him his how i if in into is it its just me more most my no nor not of off on once
    only or other our ours out over own same she should so some such than that the
    their theirs them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you
    your yours re ve ll don doesn isn aren
    """.split()  # noqa: SIM905
)

_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z0-9$])")
_DOCUMENT_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def _fold_plural(token: str) -> str:
    """Fold the common English plural so "credits" matches "credit"."""
    if not token.isalpha() or len(token) <= 3:
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens, without stopwords and single letters."""
    return [
        _fold_plural(token)
        for token in _TOKEN.findall(text.lower())
        if token not in STOPWORDS and (len(token) > 1 or token.isdigit())
    ]


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    index: int  # position of the chunk within its document, from 0
    sentences: tuple[str, ...]  # body sentences, the only text an answer quotes
    term_counts: Counter[str]  # title, headings and body
    length: int  # number of indexed tokens


@dataclass(frozen=True)
class Hit:
    score: float
    chunk: Chunk


@dataclass(frozen=True)
class Index:
    doc_ids: tuple[str, ...]
    chunks: tuple[Chunk, ...]
    idf: dict[str, float]
    postings: dict[str, tuple[tuple[int, int], ...]]  # term -> (chunk position, tf)
    average_length: float
    rare_term_idf: float  # idf of a term that occurs in exactly one chunk

    def search(self, query_terms: list[str], k: int = TOP_K) -> list[Hit]:
        scores: dict[int, float] = {}
        for term in set(query_terms):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for position, tf in self.postings[term]:
                length_norm = 1 - BM25_B + BM25_B * (self.chunks[position].length / self.average_length)
                scores[position] = scores.get(position, 0.0) + idf * (tf * (BM25_K1 + 1) / (tf + BM25_K1 * length_norm))
        # Ties go to the earlier chunk, so ranking never depends on dict order.
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [Hit(score, self.chunks[position]) for position, score in ranked[:k]]


def _split_sentences(paragraph: str) -> list[str]:
    lines = [line.strip() for line in paragraph.splitlines() if line.strip()]
    if all(line.startswith("- ") for line in lines):
        # A list: every item stands on its own.
        return [line[2:].strip() for line in lines]
    return [s.strip() for s in _SENTENCE_END.split(" ".join(lines)) if s.strip()]


def _parse_document(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """Return the title and the sections, each a heading and its paragraphs."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError("a corpus document must start with a '# Title' line")
    title = lines[0][2:].strip()
    sections: list[tuple[str, list[str]]] = [("", [])]
    paragraph: list[str] = []

    def end_paragraph() -> None:
        if paragraph:
            sections[-1][1].append("\n".join(paragraph))
            paragraph.clear()

    for line in lines[1:]:
        if line.startswith("## "):
            end_paragraph()
            sections.append((line[3:].strip(), []))
        elif line.strip():
            paragraph.append(line)
        else:
            end_paragraph()
    end_paragraph()
    return title, [section for section in sections if section[1]]


def _chunk_document(doc_id: str, text: str) -> list[Chunk]:
    """Group paragraphs into chunks of about MIN..MAX_CHUNK_WORDS words.

    A chunk ends at a section boundary once it holds MIN_CHUNK_WORDS words, or
    before a paragraph that would take it over MAX_CHUNK_WORDS.
    """
    title, sections = _parse_document(text)
    groups: list[tuple[list[str], list[str]]] = []  # (headings, paragraphs)
    headings: list[str] = []
    paragraphs: list[str] = []
    words = 0

    def flush() -> None:
        nonlocal headings, paragraphs, words
        if paragraphs:
            groups.append((headings, paragraphs))
        headings, paragraphs, words = [], [], 0

    for heading, section_paragraphs in sections:
        if heading:
            headings.append(heading)
        for paragraph in section_paragraphs:
            paragraph_words = len(paragraph.split())
            if paragraphs and words + paragraph_words > MAX_CHUNK_WORDS:
                flush()
            paragraphs.append(paragraph)
            words += paragraph_words
        if words >= MIN_CHUNK_WORDS:
            flush()
    if groups and paragraphs:
        # A short tail joins the chunk before it when they fit together.
        tail_words = words + sum(len(p.split()) for p in groups[-1][1])
        if words < MIN_CHUNK_WORDS and tail_words <= MAX_CHUNK_WORDS:
            last_headings, last_paragraphs = groups.pop()
            headings = last_headings + headings
            paragraphs = last_paragraphs + paragraphs
    flush()

    chunks = []
    for index, (chunk_headings, chunk_paragraphs) in enumerate(groups):
        sentences = tuple(s for p in chunk_paragraphs for s in _split_sentences(p))
        terms = tokenize(" ".join([title, *chunk_headings, *chunk_paragraphs]))
        chunks.append(Chunk(doc_id, index, sentences, Counter(terms), len(terms)))
    return chunks


@lru_cache(maxsize=8)
def load_index(corpus_dir: Path = CORPUS_DIR) -> Index:
    """Build the BM25 index of every ``<document-id>.md`` in corpus_dir, once."""
    paths = sorted(Path(corpus_dir).glob("*.md"))
    chunks: list[Chunk] = []
    for path in paths:
        if not _DOCUMENT_ID.match(path.stem):
            raise ValueError(f"{path.name}: the file name is not a document id slug")
        chunks.extend(_chunk_document(path.stem, path.read_text(encoding="utf-8")))

    postings: dict[str, list[tuple[int, int]]] = {}
    for position, chunk in enumerate(chunks):
        for term, tf in chunk.term_counts.items():
            postings.setdefault(term, []).append((position, tf))
    n = len(chunks)
    idf = {term: math.log(1 + (n - len(posts) + 0.5) / (len(posts) + 0.5)) for term, posts in postings.items()}
    return Index(
        doc_ids=tuple(path.stem for path in paths),
        chunks=tuple(chunks),
        idf=idf,
        postings={term: tuple(posts) for term, posts in postings.items()},
        average_length=(sum(c.length for c in chunks) / n) if n else 0.0,
        rare_term_idf=math.log(1 + (n - 0.5) / 1.5) if n else 0.0,
    )


def _extract(chunk: Chunk, query_terms: set[str], idf: dict[str, float]) -> str:
    """The 1-2 sentences of the chunk that best overlap the question, in order."""
    overlaps = []
    for position, sentence in enumerate(chunk.sentences):
        shared = query_terms.intersection(tokenize(sentence))
        overlaps.append((sum(idf.get(term, 0.0) for term in shared), position))
    best = sorted(overlaps, key=lambda item: (-item[0], item[1]))
    if not best or best[0][0] <= 0:
        # Nothing in the chunk overlaps the question: quote its opening sentence.
        return chunk.sentences[0] if chunk.sentences else ""
    top_score = best[0][0]
    chosen = [position for score, position in best[:MAX_ANSWER_SENTENCES] if score >= SECOND_SENTENCE_RATIO * top_score]
    return " ".join(chunk.sentences[position] for position in sorted(chosen))


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _response(
    answer_text: str,
    *,
    citations: list[str],
    retrieved: list[str],
    abstained: bool,
    steps: int,
) -> dict:
    return {
        "answer": answer_text,
        "citations": citations,
        "toolCalls": [],
        "steps": steps,
        "abstained": abstained,
        "askedClarification": False,
        "requestedConfirmation": False,
        "retrieved": retrieved,
    }


def answer(
    question: str,
    retrieval: str = "normal",
    seed: int = 0,
    *,
    corpus_dir: Path | None = None,
) -> dict:
    """Answer a question the way the target protocol asks, under a retrieval mode.

    - ``normal``: BM25 top-k; abstain when nothing is relevant, else answer
      extractively from the top chunk and cite its document.
    - ``disabled``: no documents at all, so the system abstains.
    - ``random-chunk``: the top chunk is swapped for a chunk of another document,
      chosen with ``random.Random(seed)``; the answer is extracted from that one.
    """
    if retrieval not in RETRIEVAL_MODES:
        raise ValueError(f"unknown retrieval mode {retrieval!r}; expected one of " + ", ".join(RETRIEVAL_MODES))
    if retrieval == "disabled":
        return _response(NO_DOCUMENTS_ANSWER, citations=[], retrieved=[], abstained=True, steps=0)

    index = load_index(Path(corpus_dir or CORPUS_DIR).resolve())
    query_terms = tokenize(question)
    hits = index.search(query_terms)
    if not hits or hits[0].score < MIN_RELEVANCE * index.rare_term_idf:
        return _response(
            NOTHING_RELEVANT_ANSWER,
            citations=[],
            retrieved=_unique([hit.chunk.doc_id for hit in hits]),
            abstained=True,
            steps=1,
        )

    chunks = [hit.chunk for hit in hits]
    if retrieval == "random-chunk":
        others = [c for c in index.chunks if c.doc_id != chunks[0].doc_id]
        if not others:
            return _response(
                NOTHING_RELEVANT_ANSWER,
                citations=[],
                retrieved=[],
                abstained=True,
                steps=1,
            )
        chunks[0] = random.Random(seed).choice(others)

    top = chunks[0]
    return _response(
        _extract(top, set(query_terms), index.idf),
        citations=[top.doc_id],
        retrieved=_unique([chunk.doc_id for chunk in chunks]),
        abstained=False,
        steps=1,
    )
