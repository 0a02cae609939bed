"""Synthetic gold candidates: an LLM writes the questions a sampled chunk answers.

For each sampled chunk the configured model is asked (prompt ``QUESTIONS_PROMPT``,
versioned) for natural questions the passage answers, each with a short answer and
the sentence that supports it. Every candidate keeps

- its source document and a ``quote`` (the supporting sentence, found in the
  document; else the chunk's sentence sharing most words with it) as relevance;
- ``answer_contains`` when the short answer occurs verbatim in the passage;
- ``metadata.overlap``: the share of the question's word pairs copied from the
  passage, with the tag ``literal`` at ``LITERAL_OVERLAP`` or more — such questions
  flatter lexical retrievers, so the reviewer should rephrase or reject them;
- ``source: synthetic``, ``status: candidate``: nothing enters a gold set unreviewed.

Near-duplicates are dropped: content-word Jaccard ``DUPLICATE_JACCARD`` or more, and,
when an embedder is given (the ``[dense]`` extra), cosine ``DUPLICATE_COSINE`` or more.

>>> passage_overlap("How do I install uv?", "To install uv, run the installer.")
0.25
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.corpus import Corpus
from ragmeter.documents import Chunk
from ragmeter.feedback._textsim import content_words, group_similar, words
from ragmeter.gold.goldset import GoldItem, Relevance
from ragmeter.gold.quotes import find_quote
from ragmeter.judge.prompting import Complete, Prompt
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus

__all__ = [
    "DUPLICATE_COSINE",
    "DUPLICATE_JACCARD",
    "LITERAL_OVERLAP",
    "QUESTIONS_PROMPT",
    "SynthResult",
    "generate_questions",
    "passage_overlap",
]

#: Questions whose word pairs come from the passage at this share or more are tagged literal.
LITERAL_OVERLAP = 0.5
#: Content-word Jaccard at or above which a later question is a duplicate and dropped.
DUPLICATE_JACCARD = 0.7
#: Embedding cosine at or above which a later question is a duplicate (dense extra only).
DUPLICATE_COSINE = 0.92
#: Chunks shorter than this many characters say too little to ask about.
MIN_CHUNK_CHARS = 150
#: Longest short answer kept as an answer check, in characters.
MAX_ANSWER_CHARS = 80
#: LLM calls in flight at once.
CONCURRENCY = 4

QUESTIONS_PROMPT = Prompt(
    name="synth-questions",
    version=1,
    system=(
        "You write the questions real users type into a documentation search box. "
        "Users are busy and informal; they ask about their goal, not about the text. "
        "Reply with JSON only."
    ),
    user=(
        "Passage from {doc}:\n<<<\n{passage}\n>>>\n\n"
        "Write {n} different questions that this passage answers. Each question must be "
        "answerable from the passage alone, must not mention 'the passage' or 'the text', "
        "and should use the user's words rather than copying the passage. For each, give "
        'the short answer copied from the passage ("answer") and the one sentence of the '
        'passage that supports it, copied exactly ("evidence").\n'
        'JSON: {{"questions": [{{"question": "...", "answer": "...", "evidence": "..."}}]}}'
    ),
    schema={
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "maxLength": 300},
                        "answer": {"type": "string", "maxLength": 200},
                        "evidence": {"type": "string", "maxLength": 600},
                    },
                    "required": ["question", "answer", "evidence"],
                },
            }
        },
        "required": ["questions"],
    },
)

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")


@dataclass
class SynthResult:
    """What ``generate_questions`` produced and what it left out."""

    items: list[GoldItem]
    chunks: int = 0
    duplicates: int = 0
    unusable: int = 0  # questions asked for but not obtained (too short, duplicates, none)
    errors: list[str] = field(default_factory=list)  # one line per failed chunk


def passage_overlap(question: str, passage: str) -> float:
    """Share of the question's consecutive word pairs that also occur in the passage.

    1.0 is a copied phrase, 0.0 a question in other words. A one-word question
    scores its single word.

    >>> passage_overlap("refund window length", "The refund window is 30 days.")
    0.5
    """
    q, p = words(question), words(passage)
    if len(q) < 2:
        return float(bool(q) and q[0] in set(p))
    pairs = list(zip(q, q[1:], strict=False))
    have = set(zip(p, p[1:], strict=False))
    return sum(pair in have for pair in pairs) / len(pairs)


def _sample_chunks(
    corpus: Corpus,
    chunks: Sequence[Chunk],
    *,
    per_doc: int,
    docs: str | None,
    sample: int | None,
    seed: int,
) -> list[tuple[Chunk, int]]:
    """(chunk, questions to ask of it): up to ``per_doc`` questions per document."""
    rng = random.Random(seed)
    doc_ids = [d for d in corpus.documents if docs is None or fnmatch.fnmatch(d, docs)]
    if sample is not None and sample < len(doc_ids):
        doc_ids = sorted(rng.sample(doc_ids, sample), key=doc_ids.index)
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    plan: list[tuple[Chunk, int]] = []
    for doc_id in doc_ids:
        usable = [c for c in by_doc.get(doc_id, []) if len(c.text.strip()) >= MIN_CHUNK_CHARS]
        usable = usable or by_doc.get(doc_id, [])[:1]
        if not usable:
            continue
        picked = sorted(rng.sample(usable, min(per_doc, len(usable))), key=usable.index)
        # Spread the document's questions over the picked chunks.
        share = [per_doc // len(picked) + (i < per_doc % len(picked)) for i in range(len(picked))]
        plan.extend((chunk, n) for chunk, n in zip(picked, share, strict=True) if n)
    return plan


def _quote(chunk: Chunk, doc_text: str, evidence: str, question: str, answer: str) -> str:
    """The supporting passage as it is in the document (so ``quote`` always resolves)."""
    evidence = evidence.strip().strip('"')
    if evidence:
        span = find_quote(chunk.text, evidence, chunk.doc_id, {})
        if span is not None:
            return doc_text[chunk.start + span[0] : chunk.start + span[1]].strip()
    want = content_words(question) | content_words(answer)
    sentences = [m for m in _SENTENCE.finditer(chunk.text) if m.group().strip()]
    if not sentences:
        return chunk.text.strip()
    best = max(sentences, key=lambda m: len(content_words(m.group()) & want))
    return best.group().strip()


def _answer_check(chunk: Chunk, answer: str) -> str | None:
    answer = answer.strip().strip('"').rstrip(".")
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return None
    span = find_quote(chunk.text, answer, chunk.doc_id, {})
    return chunk.text[span[0] : span[1]] if span is not None else None


def _candidates(chunk: Chunk, doc_text: str, reply: Mapping[str, Any]) -> list[GoldItem]:
    items = []
    for entry in reply.get("questions") or []:
        if not isinstance(entry, Mapping):
            continue
        question = " ".join(str(entry.get("question") or "").split())
        if len(words(question)) < 3:
            continue
        answer = str(entry.get("answer") or "")
        quote = _quote(chunk, doc_text, str(entry.get("evidence") or ""), question, answer)
        check = _answer_check(chunk, answer)
        overlap = round(passage_overlap(question, chunk.text), 3)
        digest = hashlib.sha256(f"{chunk.doc_id}\n{question}".encode()).hexdigest()[:10]
        items.append(
            GoldItem(
                id=f"syn-{digest}",
                question=question,
                relevant=(Relevance(doc=chunk.doc_id, quote=quote, grade=2),),
                answer_contains=(check,) if check else (),
                tags=("literal",) if overlap >= LITERAL_OVERLAP else (),
                source="synthetic",
                status="candidate",
                metadata={
                    "prompt": QUESTIONS_PROMPT.key,
                    "chunk": chunk.id,
                    "overlap": overlap,
                    "answer": answer.strip(),
                },
            )
        )
    return items


def generate_questions(
    corpus: Corpus,
    complete: Complete,
    *,
    per_doc: int = 3,
    docs: str | None = None,
    sample: int | None = None,
    seed: int = 0,
    chunker: ChunkerConfig | None = None,
    embedder: Any = None,
) -> SynthResult:
    """Ask the model for ``per_doc`` questions per document; return deduplicated candidates.

    ``complete`` is the LLM call (``ragmeter.judge.prompting.from_client`` wraps the judge
    client). ``docs`` is a glob on document ids; ``sample`` picks that many documents
    (seeded). ``embedder`` (``.encode(texts) -> normalised vectors``) adds the
    embedding near-duplicate check. A chunk whose call fails is listed in ``errors``.

    ``generate_questions(load_corpus("docs/"), complete, per_doc=3).items[0].status``
    is ``'candidate'``.
    """
    chunks = chunk_corpus(corpus, chunker or ChunkerConfig())
    plan = _sample_chunks(corpus, chunks, per_doc=per_doc, docs=docs, sample=sample, seed=seed)
    result = SynthResult(items=[], chunks=len(plan))
    replies = asyncio.run(_ask_all(plan, complete))
    raw: list[GoldItem] = []
    wanted: dict[str, int] = {}
    for (chunk, n), reply in zip(plan, replies, strict=True):
        if isinstance(reply, BaseException):
            result.errors.append(f"{chunk.id}: {reply}")
            continue
        raw.extend(_candidates(chunk, corpus.documents[chunk.doc_id].text, reply))
        wanted[chunk.id] = n
    unique = _dedupe(raw, embedder, result)
    # Deduplicate first, then keep the first n per chunk: a model that repeats itself
    # then still yields n questions when it offered more.
    taken: dict[str, int] = {}
    for item in unique:
        chunk_id = str(item.metadata["chunk"])
        if taken.get(chunk_id, 0) < wanted[chunk_id]:
            taken[chunk_id] = taken.get(chunk_id, 0) + 1
            result.items.append(item)
    result.unusable = sum(wanted.values()) - len(result.items)
    return result


async def _ask_all(
    plan: Sequence[tuple[Chunk, int]], complete: Complete
) -> list[Mapping[str, Any] | BaseException]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(chunk: Chunk, n: int) -> Mapping[str, Any]:
        async with gate:
            fields = {"doc": chunk.doc_id, "passage": chunk.text.strip(), "n": n}
            return await complete(QUESTIONS_PROMPT, fields)

    return list(await asyncio.gather(*(one(c, n) for c, n in plan), return_exceptions=True))


def _dedupe(items: list[GoldItem], embedder: Any, result: SynthResult) -> list[GoldItem]:
    texts = [item.question for item in items]
    groups = group_similar(texts, threshold=DUPLICATE_JACCARD)
    keep = [items[group[0]] for group in groups]
    if embedder is not None and len(keep) > 1:
        vectors = embedder.encode([item.question for item in keep])

        def cosine(i: int, j: int) -> float:
            a, b = vectors[i], vectors[j]
            norm = math.sqrt(float(a @ a) * float(b @ b)) or 1.0
            return float(a @ b) / norm

        groups = group_similar(
            [item.question for item in keep], threshold=DUPLICATE_COSINE, similarity=cosine
        )
        keep = [keep[group[0]] for group in groups]
    # The same question asked of two chunks gets one id; keep the first.
    seen: set[str] = set()
    unique = [item for item in keep if not (item.id in seen or seen.add(item.id))]  # type: ignore[func-returns-value]
    result.duplicates = len(items) - len(unique)
    return unique
