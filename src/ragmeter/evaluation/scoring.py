"""From stored rankings to metric values: judgments at doc, passage or chunk level.

``Judgments`` decides which retrieved items are relevant to a gold item and how
much (the grade), at the run's level (``docs/levels.md`` has a worked example):

- ``doc``: a document's grade is the highest of the gold entries naming it;
  a ranking is the documents in order of their first chunk, so a document
  retrieved twice never counts twice.
- ``passage`` (the default when the gold set has quotes or chunks): the unit is
  the gold entry; each entry is ranked at its first covering chunk
  (``ragmeter.evaluation.passages``, which holds the one coverage rule), so the
  numbers depend neither on the chunker nor on ``--corpus``; precision@k counts the
  top-k chunks that cover an entry.
- ``chunk``: a chunk is relevant when it belongs to a relevant ``doc`` (no
  quote), covers a ``quote`` (the same rule), or is a listed ``chunk``. Relevant chunks
  that were never retrieved still count in recall and the ideal DCG when the
  chunk inventory (the corpus chunked the same way) is known, so recall moves
  with the chunk size.

``score_results`` picks each metric's scorer by its family's kind alone
(``ragmeter.metrics.Family.kind``; see ``_SCORERS``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.documents import Chunk, Hit
from ragmeter.errors import MetricNameError
from ragmeter.evaluation.passages import Evidence, chunk_grade, covers, unplaced_warning
from ragmeter.evaluation.score_inputs import ScoreInputs
from ragmeter.evaluation.unknowns import answer_known
from ragmeter.gold.answers import answer_matches
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.gold.quotes import DEFAULT_MIN_OVERLAP
from ragmeter.metrics import Metric, parse_metric
from ragmeter.metrics.compute import compute_columns
from ragmeter.run import QuestionResult, QuestionValues

__all__ = [
    "LEVELS",
    "Judgments",
    "Level",
    "Scores",
    "answer_ok",
    "default_level",
    "default_metrics",
    "score_results",
]

Level = Literal["doc", "passage", "chunk"]
LEVELS: tuple[Level, ...] = ("doc", "passage", "chunk")


def default_level(gold: GoldSet) -> Level:
    """``doc`` when the gold set names only documents, else ``passage``.

    >>> default_level(GoldSet.from_records([{"id": "q", "question": "?",
    ...     "relevant": [{"doc": "a", "quote": "x"}]}]))
    'passage'
    """
    return "doc" if gold.only_docs else "passage"


def default_metrics(k: int, *, has_answers: bool = False) -> list[str]:
    """The default metric columns of a run at cutoff ``k``.

    No default cutoff is deeper than ``k``: a run keeps only its top ``k`` hits, so
    ``hit@5`` of a ``k=3`` run would be ``hit@3`` under another name (issue 24.4).

    >>> default_metrics(10)[:4]
    ['hit@1', 'hit@5', 'hit@10', 'recall@5']
    >>> default_metrics(3)[:6]
    ['hit@1', 'hit@3', 'recall@3', 'precision@3', 'mrr', 'ndcg@3']
    """
    names = [
        "hit@1",
        f"hit@{min(5, k)}",
        f"hit@{k}",
        f"recall@{min(5, k)}",
        f"recall@{k}",
        f"precision@{min(5, k)}",
        "mrr",
        f"ndcg@{min(5, k)}",
        f"ndcg@{min(10, k)}",
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
    evidence: Evidence
    gold: GoldSet

    @classmethod
    def build(
        cls,
        gold: GoldSet,
        level: Level,
        *,
        chunks: Sequence[Chunk] | None = None,
        documents: Mapping[str, Any] | None = None,
        min_overlap: float = DEFAULT_MIN_OVERLAP,
    ) -> Judgments:
        """Judgments for ``gold``; ``chunks`` lets chunk-level recall count unretrieved chunks.

        ``documents`` (the corpus) let a hit's span be read as its text; every quote must
        be found in its document. ``min_overlap`` is the coverage rule's share.
        """
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
        evidence = Evidence(documents, min_overlap)
        if level == "doc":
            return cls(level, gold.qrels(), evidence, gold)
        if documents is not None:
            gold.quote_spans(documents)  # a quote its document lacks is an error, never a miss
        if level == "passage":
            return cls(level, {}, evidence, gold)
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
                    hit = Hit(
                        chunk.id, chunk.doc_id, text=chunk.text, start=chunk.start, end=chunk.end
                    )
                    grade = chunk_grade(item, hit, evidence)
                    if grade > 0:
                        grades[chunk.id] = max(grades.get(chunk.id, 0), grade)
        return cls(level, qrels, evidence, gold)

    def grades(self, item: GoldItem, hits: Sequence[Hit]) -> list[int]:
        """The grade of each hit for ``item`` (0 = not relevant), aligned with ``hits``."""
        if self.level == "doc":
            doc_grades = self.qrels.get(item.id, {})
            return [doc_grades.get(hit.doc, 0) for hit in hits]
        if self.level == "passage":
            return list(self.annotate(item, hits)["grades"])
        return [self._chunk_grade(item, hit) for hit in hits]

    def annotate(self, item: GoldItem, hits: Sequence[Hit]) -> dict[str, Any]:
        """What is stored with a question's result: ``grades`` per hit and, at passage
        level, ``covers`` (the entries each hit covers) and ``judged_by_document`` (how
        many hits had to be judged against a quote by their document alone).

        >>> gold = GoldSet.from_records([{"id": "q", "question": "?",
        ...     "relevant": [{"doc": "a", "quote": "30 days", "grade": 2}]}])
        >>> Judgments.build(gold, "passage").annotate(gold["q"], [Hit("a#1", "a", text="in 30 days")])
        {'grades': [2], 'covers': [[0]]}
        """
        if self.level != "passage":
            return {"grades": self.grades(item, hits) if hits else []}
        found = [covers(item, hit, self.evidence) for hit in hits]
        out: dict[str, Any] = {
            "grades": [max((item.relevant[e].grade for e in c.entries), default=0) for c in found],
            "covers": [c.entries for c in found],
        }
        by_document = sum(c.by_document for c in found)
        if by_document:
            out["judged_by_document"] = by_document
        unplaced = sum(c.unplaced for c in found)
        if unplaced:  # covers by a quote's edge in text alone (passages.unplaced_warning)
            out["unplaced"] = unplaced
        return out

    def settle(self, results: Iterable[QuestionResult]) -> tuple[Level, list[str]]:
        """The level a finished run is scored at, and the warnings to store on it.

        At passage level, quote entries need the hits' text or spans: when no hit of
        the run has either, the run falls back to doc level (never a column of
        zeros); when only some lack them, those were judged by their document.
        """
        if self.level != "passage":
            return self.level, []
        results = [r for r in results if r.error is None]
        hits = [hit for r in results for hit in r.hits]
        # A result read back from the store (a resumed run) keeps its hits' texts in
        # extra["texts"]: those hits were judged by their text (issue 24).
        kept = any(text for r in results for text in r.extra.get("texts") or ())
        by_document = sum(int(r.extra.get("judged_by_document", 0)) for r in results)
        judgeable = kept or any(self.judgeable(hit) for hit in hits)
        unplaced = {r.item_id: int(r.extra.get("unplaced", 0)) for r in results}
        return self.settle_counts(bool(hits), judgeable, by_document, unplaced)

    def settle_counts(
        self,
        any_hits: bool,
        any_judgeable: bool,
        by_document: int,
        unplaced: Mapping[str, int] | None = None,
    ) -> tuple[Level, list[str]]:
        """:meth:`settle` from what ``evaluate()`` counted as results arrived: whether any
        hit came back, whether any carried text or a span, the hits judged by their
        document (``extra["judged_by_document"]``), and per question the covers resting on
        an edge overlap nothing placed (``extra["unplaced"]``, ``passages.unplaced_warning``)."""
        if self.level != "passage":
            return self.level, []
        has_quotes = any(rel.quote for item in self.gold for rel in item.relevant)
        if has_quotes and any_hits and not any_judgeable:
            return "doc", [
                "the retrieved hits carry neither text nor character spans, so the gold "
                "set's quotes cannot be checked: scored at doc level instead of passage "
                "level (return chunk text, or start/end offsets with --corpus)"
            ]
        warnings = unplaced_warning(unplaced or {}, corpus=self.evidence.documents is not None)
        if by_document:
            warnings.append(
                f"{by_document} retrieved hit(s) carried neither text nor character spans: "
                "quote entries were judged by their document for them"
            )
        return self.level, warnings

    def judgeable(self, hit: Hit) -> bool:
        """A hit whose text (its own, or read at its span) can be matched against quotes."""
        return self.evidence.chunk_text(hit) is not None

    def _chunk_grade(self, item: GoldItem, hit: Hit) -> int:
        grade = chunk_grade(item, hit, self.evidence)
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
    """Metric means and per-question values of a run (``per_query``: metric -> item id ->
    value; a ranking metric's dict is built when it is read, see
    :class:`~ragmeter.run.QuestionValues`)."""

    means: dict[str, float]
    per_query: Mapping[str, dict[str, float]]


_Scored = tuple[dict[str, float], Mapping[str, dict[str, float]]]  # means, per-question values
Scorer = Callable[[Sequence[Metric], ScoreInputs], _Scored]


def _mean(values: dict[str, float]) -> float:
    return float(np.mean(list(values.values()))) if values else 0.0


def _score_ranking(metrics: Sequence[Metric], inputs: ScoreInputs) -> _Scored:
    """trec_eval's measures over the judged rankings (precision@k over the hits at passage level)."""
    of_hits = [m for m in metrics if inputs.hit_qrels is not None and m.family.of_retrieved]
    groups = [
        ([m for m in metrics if m not in of_hits], inputs.qrels, inputs.rankings),
        (of_hits, inputs.hit_qrels or {}, inputs.hit_rankings),
    ]
    means: dict[str, float] = {}
    per_query = QuestionValues()
    for group, all_qrels, rankings in groups:
        # Items with only grade-0 judgments have nothing to find: left out (issue 24.4).
        qrels = all_qrels
        if not all_qrels.keys() <= inputs.positive:
            qrels = {i: grades for i, grades in all_qrels.items() if i in inputs.positive}
        if not group or not qrels:
            continue
        # Ranked tuples: one vectorised pass over every question; the values stay columns
        # until someone reads them as dicts (issue 29.2).
        group_means, qids, columns = compute_columns(qrels, rankings, [str(m) for m in group])
        means.update(group_means)
        per_query.add_columns(qids, columns)
    return means, per_query


def _score_answer(metrics: Sequence[Metric], inputs: ScoreInputs) -> _Scored:
    """1 when retrieved text within the cutoff contains an answer (items with ``answer_contains``)."""
    means: dict[str, float] = {}
    per_query: dict[str, dict[str, float]] = {}
    for metric in metrics:
        cutoff = metric.k or inputs.k
        values: dict[str, float] = {}
        for item in inputs.gold:
            if not item.answer_contains:
                continue
            result = inputs.answer_results.get(item.id)
            # No result, or a failed retrieval: 0, in the mean; hits without text: unknown.
            value = 0.0 if result is None else answer_known(result, cutoff)
            if value is not None:
                values[item.id] = value
        if values:  # no question it could be told for: absent, never 0 (issue 24.4)
            per_query[str(metric)] = values
            means[str(metric)] = _mean(values)
    return means, per_query


def _score_generation(metrics: Sequence[Metric], inputs: ScoreInputs) -> _Scored:
    """The answer's ``answer_contains`` check, over items that have patterns."""
    checks = {
        item.id: answer_ok(inputs.answers.get(item.id), item.answer_contains)
        for item in inputs.gold
        if item.id not in inputs.no_answer
    }
    values = {i: float(ok) for i, ok in checks.items() if ok is not None}
    if not values:
        return {}, {}
    return (
        {str(m): _mean(values) for m in metrics},
        {str(m): dict(values) for m in metrics},
    )


def _score_judge(metrics: Sequence[Metric], inputs: ScoreInputs) -> _Scored:
    """The judge's verdicts, over the questions it gave one (failures show as coverage)."""
    values = {i: float(v) for i, v in inputs.faithful.items() if i in inputs.gold}
    return (
        {str(m): _mean(values) for m in metrics},
        {str(m): dict(values) for m in metrics},
    )


def _score_latency(metrics: Sequence[Metric], inputs: ScoreInputs) -> _Scored:
    """The family's percentile of retrieval latency (a run-level number, no per-question values)."""
    means: dict[str, float] = {}
    for metric in metrics:
        percentile = metric.family.percentile
        if percentile is None:
            raise MetricNameError(f"latency metric {metric} names no percentile in its family")
        means[str(metric)] = (
            float(np.percentile(inputs.latencies, percentile)) if inputs.latencies else 0.0
        )
    return means, {}


_SCORERS: dict[str, Scorer] = {
    "ranking": _score_ranking,
    "answer": _score_answer,
    "generation": _score_generation,
    "judge": _score_judge,
    "latency": _score_latency,
}
"""One scorer per metric kind. A new family of an existing kind is scored with no change
here; a new kind (``ragmeter.metrics._base.Kind``) needs one entry."""


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
    At passage level ``qrels`` holds only labels beyond the gold set (chunk id ->
    grade, e.g. the judge's); the gold entries come from ``gold``.

    >>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": [{"doc": "a"}]}])
    >>> hits = (Hit("b#0", "b"), Hit("a#3", "a"))
    >>> score_results(gold, [QuestionResult("q", hits)], level="doc", k=10,
    ...               metrics=["mrr", "precision@2"]).means
    {'mrr': 0.5, 'precision@2': 0.5}
    """
    inputs = ScoreInputs.start(gold, level=level, k=k, qrels=qrels, faithful=faithful)
    for result in results:
        inputs.add(result)
    return score_inputs(inputs, metrics)


def score_inputs(inputs: ScoreInputs, metrics: Sequence[str]) -> Scores:
    """Compute ``metrics`` over what :class:`ScoreInputs` gathered (``evaluate()`` feeds it
    one question at a time, :func:`score_results` from stored results)."""
    inputs.close()
    parsed = list(dict.fromkeys(parse_metric(name) for name in metrics))
    by_kind: dict[str, list[Metric]] = {}
    for metric in parsed:
        by_kind.setdefault(metric.kind, []).append(metric)
    means: dict[str, float] = {}
    per_query = QuestionValues()
    for kind, group in by_kind.items():
        scorer = _SCORERS.get(kind)
        if scorer is None:
            raise MetricNameError(f"no scorer for {kind} metrics ({', '.join(map(str, group))})")
        kind_means, kind_values = scorer(group, inputs)
        means.update(kind_means)
        per_query.merge(kind_values)
    order = [str(m) for m in parsed]
    return Scores(
        means={name: means[name] for name in order if name in means},
        per_query=per_query.only(order),
    )
