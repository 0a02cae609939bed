"""What a run cannot compute is absent, and the run says why: never a 0 (issue 24.4).

- an item whose judgments are all grade 0 has nothing to find: it is left out of the
  retrieval means (``positive_items``), named in a warning stored on the run;
- ``answer_in_context@k`` of a question whose hits carry no text is unknown, not 0
  (``answer_in_context`` records it when the hits are fresh: the store keeps no full text);
- an empty answer from a retrieval-only engine is no answer, not a failed one;
- a metric cut deeper than the run's ``k`` gets a note (``deeper_than_k``);
- ``--level chunk`` without the chunk inventory is refused (``check_chunk_level``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragmeter.documents import Chunk, Hit
from ragmeter.errors import ConfigError
from ragmeter.gold.answers import first_containing_rank
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.metrics import parse_metric
from ragmeter.run import QuestionResult

__all__ = [
    "answer_in_context",
    "answer_known",
    "answer_unknown",
    "check_chunk_level",
    "deeper_than_k",
    "nothing_to_find",
    "positive_items",
    "unknown_warnings",
    "unknown_warnings_from",
]


def deeper_than_k(metrics: Iterable[str], k: int) -> list[str]:
    """The note stored on a run asked for metrics cut deeper than its ``k``.

    >>> deeper_than_k(["ndcg@10", "mrr", "hit@3"], 3)  # doctest: +ELLIPSIS
    ['ndcg@10 is cut at 10 but the run kept only the top 3 hits: ...']
    """
    out = []
    for name in metrics:
        metric = parse_metric(name)
        if metric.kind in ("ranking", "answer") and metric.k is not None and metric.k > k:
            out.append(
                f"{metric} is cut at {metric.k} but the run kept only the top {k} hits: ranks "
                f"{k + 1}-{metric.k} count as not retrieved (evaluate with -k {metric.k} to "
                "measure that depth)"
            )
    return out


def positive_items(
    gold: GoldSet, labels: Mapping[str, Mapping[str, int]] | None = None
) -> set[str]:
    """Ids of the items with at least one positive judgment (gold grade > 0, or a label's).

    Retrieval means are over these only: an item whose judgments are all grade 0 has
    nothing to find, so any ranking metric of it would be a 0 that means "unknown".

    >>> positive_items(GoldSet.from_records([{"id": "a", "question": "?", "relevant": [
    ...     {"doc": "x", "grade": 0}]}, {"id": "b", "question": "?", "relevant": ["y"]}]))
    {'b'}
    """
    out = {item_id for item_id, top in gold.top_grades().items() if top > 0}
    for item_id, grades in (labels or {}).items():
        # Most labelled items are positive in the gold set already (issue 29.2).
        if item_id not in out and item_id in gold and any(g > 0 for g in grades.values()):
            out.add(item_id)
    return out


def nothing_to_find(gold: GoldSet) -> list[str]:
    """The warning naming the items whose judgments are all grade 0 (run and ``gold check``).

    >>> nothing_to_find(GoldSet.from_records([{"id": "z", "question": "?", "relevant": [
    ...     {"doc": "x", "grade": 0}]}]))  # doctest: +ELLIPSIS
    ['1 item(s) have only grade-0 judgments, so there is nothing to find: ...: z']
    """
    nothing = gold.nothing_to_find()
    if not nothing:
        return []
    return [
        f"{len(nothing)} item(s) have only grade-0 judgments, so there is nothing to find: "
        f"left out of the retrieval means: {_listed(nothing)}"
    ]


def unknown_warnings(gold: GoldSet, results: Iterable[QuestionResult], k: int) -> list[str]:
    """What a run could not compute, said once on the run (issue 24.4): items with nothing
    to find (left out of the retrieval means), answer checks without retrieved text, and
    answers that were empty because nothing was generated."""
    results = [r for r in results if r.error is None and r.item_id in gold]
    unknown = [r.item_id for r in results if answer_unknown(gold[r.item_id], r, k)]
    empty = sum(bool(r.extra.get("answer_empty")) for r in results)
    return unknown_warnings_from(gold, unknown, empty, k)


def unknown_warnings_from(gold: GoldSet, unknown: Sequence[str], empty: int, k: int) -> list[str]:
    """:func:`unknown_warnings` from what was counted as results arrived: the questions
    whose ``answer_in_context@k`` is unknown, and how many answers were empty."""
    out = nothing_to_find(gold)
    if unknown:
        out.append(
            f"answer_in_context@{k}: {len(unknown)} question(s) had hits without text, so "
            f"whether the answer was retrieved is unknown: left out: {_listed(unknown)}"
        )
    if empty:
        out.append(
            f"{empty} question(s) came back with an empty answer from the retriever (a "
            "retrieval-only engine, e.g. LlamaIndex response_mode='no_text'): nothing was "
            "generated, so answer metrics leave them out"
        )
    return out


_LISTED = 10  # ids named in a warning before "…"


def _listed(ids: Sequence[str]) -> str:
    return ", ".join(ids[:_LISTED]) + (" …" if len(ids) > _LISTED else "")


def answer_in_context(item: GoldItem, hits: Sequence[Hit]) -> dict[str, Any]:
    """What a result stores for ``answer_in_context@k``: ``answer_rank`` (the first hit whose
    text contains an answer, or None) and, when a hit above it (or any hit, if none contains
    it) carried no text, ``answer_unseen``: that hit's rank. From there on the answer may be
    in a text nobody saw, so a cutoff at or past it cannot be told (issue 24.4).

    >>> item = GoldItem(id="q", question="?", answer_contains=["30 days"])
    >>> answer_in_context(item, [Hit("a#0", "a", text="in 30 days")])
    {'answer_rank': 1}
    >>> answer_in_context(item, [Hit("a#0", "a", text="no"), Hit("b#0", "b")])
    {'answer_rank': None, 'answer_unseen': 2}
    """
    if not item.answer_contains:
        return {}
    rank = first_containing_rank((hit.text for hit in hits), item.answer_contains)
    out: dict[str, Any] = {"answer_rank": rank}
    above = hits if rank is None else hits[: rank - 1]
    unseen = next((n for n, hit in enumerate(above, start=1) if not hit.text), None)
    if unseen is not None:
        out["answer_unseen"] = unseen
    return out


def answer_known(result: QuestionResult, cutoff: int) -> float | None:
    """``answer_in_context@cutoff`` of a stored result: 1, 0, or None when it cannot be told.

    >>> answer_known(QuestionResult("q", extra={"answer_rank": 3, "answer_unseen": 2}), 2)
    >>> answer_known(QuestionResult("q", extra={"answer_rank": 3, "answer_unseen": 2}), 3)
    1.0
    """
    rank = result.extra.get("answer_rank")
    if rank is not None and rank <= cutoff:
        return 1.0
    unseen = result.extra.get("answer_unseen")
    return None if unseen is not None and unseen <= cutoff else 0.0


def answer_unknown(item: GoldItem, result: QuestionResult, cutoff: int) -> bool:
    """True when ``answer_in_context@cutoff`` cannot be told for ``result`` (see above)."""
    return bool(item.answer_contains) and answer_known(result, cutoff) is None


def check_chunk_level(gold: GoldSet, level: str, chunks: Sequence[Chunk] | None) -> None:
    """Chunk-level recall counts every relevant chunk of the corpus: without the chunk
    inventory it would count only the retrieved ones (recall 1.0 with half the documents
    found), so it is refused unless the gold set lists its chunks itself (issue 24.4)."""
    if level != "chunk" or chunks is not None:
        return
    if all(rel.chunk is not None for item in gold for rel in item.relevant):
        return
    raise ConfigError(
        "--level chunk needs the chunk inventory to count the relevant chunks that were not "
        "retrieved: pass --corpus (cut with the retriever's own --chunker), or use "
        "--level passage, which needs no inventory"
    )
