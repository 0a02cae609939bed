"""From stored rankings to metric values: judgments at doc or chunk level.

``Judgments`` decides which retrieved items are relevant to a gold item and how
much (the grade), at the run's level:

- ``doc``: a document's grade is the highest of the gold entries naming it;
  a ranking is the documents in order of their first chunk, so a document
  retrieved twice never counts twice.
- ``chunk``: a chunk is relevant when it belongs to a relevant ``doc`` (no
  quote), overlaps a ``quote`` span, or is a listed ``chunk``. Relevant chunks
  that were never retrieved still count in recall and the ideal DCG when the
  chunk inventory (the corpus chunked the same way) is known.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.documents import Chunk, Hit
from ragmeter.gold.answers import answer_matches, normalize
from ragmeter.gold.goldset import GoldItem, GoldSet, chunk_grade
from ragmeter.metrics import compute_metrics, parse_metric
from ragmeter.run import QuestionResult

__all__ = ["Judgments", "Scores", "answer_ok", "default_metrics", "score_results"]

Level = Literal["doc", "chunk"]


def default_metrics(k: int, *, has_answers: bool = False) -> list[str]:
    """The default metric columns of a run at cutoff ``k``.

    >>> default_metrics(10)[:4]
    ['hit@1', 'hit@5', 'hit@10', 'recall@5']
    """
    names = [
        "hit@1",
        "hit@5",
        f"hit@{k}",
        "recall@5",
        f"recall@{k}",
        "precision@5",
        "mrr",
        "ndcg@5",
        "ndcg@10",
        "map",
    ]
    if has_answers:
        names.append(f"answer_in_context@{k}")
    names += ["latency_p50_ms", "latency_p95_ms"]
    return list(dict.fromkeys(str(parse_metric(n)) for n in names))


@dataclass(frozen=True)
class Judgments:
    """Relevance of retrieved items to gold items, at one level."""

    level: Level
    qrels: Mapping[str, Mapping[str, int]]
    spans: Mapping[tuple[str, int], tuple[int, int]]
    gold: GoldSet

    @classmethod
    def build(
        cls,
        gold: GoldSet,
        level: Level,
        *,
        chunks: Sequence[Chunk] | None = None,
        documents: Mapping[str, Any] | None = None,
    ) -> Judgments:
        """Judgments for ``gold``; ``chunks`` lets chunk-level recall count unretrieved chunks."""
        if level == "doc":
            return cls(level, gold.qrels(), {}, gold)
        spans = gold.quote_spans(documents) if documents is not None else {}
        qrels: dict[str, dict[str, int]] = {item.id: {} for item in gold}
        by_doc: dict[str, list[Chunk]] = {}
        for chunk in chunks or ():
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        for item in gold:
            grades = qrels[item.id]
            for rel in item.relevant:
                if rel.chunk is not None and rel.grade > 0:
                    grades[rel.chunk] = max(grades.get(rel.chunk, 0), rel.grade)
            for doc_id in {rel.doc for rel in item.relevant if rel.doc is not None}:
                for chunk in by_doc.get(doc_id, ()):
                    grade = chunk_grade(item, chunk.id, chunk.doc_id, chunk.start, chunk.end, spans)
                    if grade > 0:
                        grades[chunk.id] = max(grades.get(chunk.id, 0), grade)
        return cls(level, qrels, spans, gold)

    def grades(self, item: GoldItem, hits: Sequence[Hit]) -> list[int]:
        """The grade of each hit for ``item`` (0 = not relevant), aligned with ``hits``."""
        if self.level == "doc":
            doc_grades = self.qrels.get(item.id, {})
            return [doc_grades.get(hit.doc, 0) for hit in hits]
        return [self._chunk_grade(item, hit) for hit in hits]

    def _chunk_grade(self, item: GoldItem, hit: Hit) -> int:
        grade = chunk_grade(item, hit.id, hit.doc, hit.start, hit.end, self.spans)
        if hit.text:
            # A retriever with its own chunking may return text without spans:
            # a quote found inside the chunk text is an overlap too.
            text = normalize(hit.text)
            for rel in item.relevant:
                if (
                    rel.quote
                    and rel.doc == hit.doc
                    and rel.grade > grade
                    and normalize(rel.quote) in text
                ):
                    grade = rel.grade
        return max(grade, self.qrels.get(item.id, {}).get(hit.id, 0))


def answer_ok(answer: str | None, patterns: Sequence[str]) -> bool | None:
    """The dumb check: does the answer contain every ``answer_contains`` pattern?

    ``None`` when the question has no patterns; a missing answer fails.

    >>> answer_ok("Refunds within 30  Days.", ["30 days", "re:refunds?"])
    True
    >>> answer_ok(None, ["30 days"]), answer_ok("anything", [])
    (False, None)
    """
    if not patterns:
        return None
    if not answer:
        return False
    return all(answer_matches(answer, [pattern]) for pattern in patterns)


@dataclass(frozen=True)
class Scores:
    """Metric means and per-question values of a run."""

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]


def _ranking(result: QuestionResult, level: str) -> list[str]:
    ids = (hit.doc for hit in result.hits) if level == "doc" else (hit.id for hit in result.hits)
    return list(dict.fromkeys(ids))


def score_results(
    gold: GoldSet,
    results: Iterable[QuestionResult],
    *,
    level: str,
    k: int,
    metrics: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    faithful: Mapping[str, bool] | None = None,
) -> Scores:
    """Compute ``metrics`` over stored results; every gold item is in every mean.

    A question with no result, or whose retrieval failed, scores 0 on ranking
    metrics. ``answer_in_context@k`` averages over items with ``answer_contains``;
    latency percentiles over questions that were retrieved without error.
    ``answer_ok`` averages over items with ``answer_contains`` (a missing answer
    scores 0); ``faithful`` over the questions the judge gave a verdict
    (``faithful`` maps item id -> supported; judge failures show as coverage).
    """
    base: dict[str, dict[str, int]] = {
        item_id: dict(grades) for item_id, grades in (qrels or gold.qrels()).items()
    }
    rankings: dict[str, list[str]] = {}
    answer_rank: dict[str, int | None] = {}
    answers: dict[str, str | None] = {}
    latencies: list[float] = []
    for result in results:
        if result.item_id not in gold:
            continue
        if result.error is not None:
            continue
        answers[result.item_id] = result.answer
        ranking = _ranking(result, level)
        rankings[result.item_id] = ranking
        grades = result.extra.get("grades") or []
        judged = base.setdefault(result.item_id, {})
        # Grades seen at retrieval time (e.g. quote overlap without a chunk
        # inventory) join the judgments so recall and nDCG see them.
        for hit, grade in zip(result.hits, grades, strict=False):
            key = hit.doc if level == "doc" else hit.id
            if grade > judged.get(key, 0):
                judged[key] = int(grade)
        if "answer_rank" in result.extra:
            answer_rank[result.item_id] = result.extra["answer_rank"]
        if result.latency_ms is not None:
            latencies.append(result.latency_ms)

    parsed = [parse_metric(name) for name in metrics]
    ranking_names = [str(m) for m in parsed if m.kind == "ranking"]
    for item in gold:
        base.setdefault(item.id, {})
    computed = compute_metrics(base, rankings, ranking_names) if ranking_names else None
    means: dict[str, float] = dict(computed.means) if computed else {}
    per_query: dict[str, dict[str, float]] = (
        {name: dict(values) for name, values in computed.per_query.items()} if computed else {}
    )
    for metric in parsed:
        name = str(metric)
        if metric.kind == "answer":
            cutoff = metric.k or k
            values = {
                item.id: float(
                    answer_rank.get(item.id) is not None and answer_rank[item.id] <= cutoff  # type: ignore[operator]
                )
                for item in gold
                if item.answer_contains
            }
            per_query[name] = values
            means[name] = float(np.mean(list(values.values()))) if values else 0.0
        elif name == "answer_ok":
            checks = {
                item.id: answer_ok(answers.get(item.id), item.answer_contains) for item in gold
            }
            per_query[name] = {i: float(ok) for i, ok in checks.items() if ok is not None}
            values_ok = list(per_query[name].values())
            means[name] = float(np.mean(values_ok)) if values_ok else 0.0
        elif name == "faithful":
            per_query[name] = {i: float(v) for i, v in (faithful or {}).items() if i in gold}
            values_f = list(per_query[name].values())
            means[name] = float(np.mean(values_f)) if values_f else 0.0
        elif metric.kind == "latency":
            percentile = 50.0 if name == "latency_p50_ms" else 95.0
            means[name] = float(np.percentile(latencies, percentile)) if latencies else 0.0
    return Scores(means=means, per_query=per_query)
