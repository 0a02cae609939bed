"""Look at what came back: one question through the retriever alone."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.evaluation.hit_text import snippet
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.scoring import Judgments, default_level
from ragmeter.evaluation.setup import gold_documents, min_overlap_of, one_spelling
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldItem
from ragmeter.pipelines.builtin import build_retriever

__all__ = ["Inspection", "inspect_question"]


@dataclass
class Inspection:
    """The ranked chunks for one question, marked against its gold item if any."""

    question: str
    item_id: str | None
    rows: list[dict[str, Any]]
    not_returned: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _find_item(gold: Any, question: str, item_id: str | None) -> GoldItem | None:
    if item_id is not None:
        return gold[item_id]  # type: ignore[no-any-return]
    wanted = " ".join(question.split()).casefold()
    for item in gold:
        if " ".join(item.question.split()).casefold() == wanted:
            return item  # type: ignore[no-any-return]
    return None


def inspect_question(
    question: str,
    job: EvalJob,
    *,
    item_id: str | None = None,
    cache_dir: Path | None = None,
) -> Inspection:
    """Retrieve ``question`` with ``job``'s retriever (spec, corpus, chunker, adapter
    options, k) and mark each chunk relevant or not when an item of ``job.gold`` matches,
    by the coverage rule at ``job.min_overlap`` (``--min-overlap``), as ``eval`` marks it.

    >>> inspect_question("how do I install?", EvalJob(corpus="docs/"))  # doctest: +SKIP
    """
    from ragmeter.retrievers import coerce_hits

    retriever, k = job.retriever, job.k
    built = build_retriever(
        retriever,
        corpus=job.corpus_source(),
        chunker=job.chunker,
        cache_dir=cache_dir,
        max_response_bytes=job.options.max_response_bytes,
        options=job.options.adapter_options(),
    )
    try:
        gold_set = load_gold(job.gold) if job.gold is not None else None
        if gold_set is not None:  # one document, one gold id, as eval reads it (issue 24)
            gold_set = one_spelling(gold_set, built.documents)[0]
        item = _find_item(gold_set, question, item_id) if gold_set is not None else None
        if item is not None:
            question = item.question if item_id is not None else question
        spec = getattr(built.retriever, "spec", retriever)
        if getattr(built.retriever, "by_item_id", False):
            raw = built.retriever.retrieve_for(item.id if item else question, question, k)
        else:
            raw = built.retriever.retrieve(question, k)
        hits = coerce_hits(raw, source=spec)
    finally:
        built.close()
    from ragmeter.retrievers.ids import IdCheck
    from ragmeter.retrievers.units import rank_units

    if gold_set is not None:  # ids read as evaluate() reads them
        hits = IdCheck.for_run(gold_set, built.documents, built.retriever).resolve(hits)
    hits = rank_units(hits)
    grades = [0] * len(hits)
    not_returned: list[str] = []
    if item is not None and gold_set is not None:
        judgments = Judgments.build(
            gold_set,
            default_level(gold_set),
            chunks=built.chunks,
            documents=gold_documents(gold_set, built.documents),
            min_overlap=min_overlap_of({"min_overlap": job.min_overlap}),
        )
        grades = judgments.grades(item, hits)
        returned = {hit.doc for hit in hits}
        not_returned = [
            doc
            for doc in dict.fromkeys(rel.doc_id for rel in item.relevant if rel.grade > 0)
            if doc not in returned
        ]
    rows = [
        {
            "rank": rank,
            "id": hit.id,
            "doc": hit.doc,
            "score": hit.score,
            "grade": grade,
            "text": snippet(hit.text),
        }
        for rank, (hit, grade) in enumerate(zip(hits, grades, strict=True), start=1)
    ]
    return Inspection(question, item.id if item else None, rows, not_returned)
