"""What the scorers read of a run, gathered one question at a time (issue 29.2).

:class:`ScoreInputs` takes each :class:`~ragmeter.run.QuestionResult` as it arrives
(:meth:`ScoreInputs.add`) and keeps only what scoring reads of it: the judged ranking as a
list of keys (documents, chunks or gold entries), the grades seen at retrieval time, the
answer of a question with ``answer_contains``, the latency. ``evaluate()`` feeds it while the
run goes and lets each result go; ``score_results`` feeds it from stored results. Either way
the same scorers (``ragmeter.evaluation.scoring``) read it.

A ranking is handed to ``compute_metrics`` as the tuple of its keys: lists and tuples take
its vectorised path for every question at once (a key repeated later keeps its first rank).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ragmeter.evaluation.passages import (
    HIT,
    Evidence,
    covers,
    entry_qrels,
    entry_ranking,
    hit_qrels,
)
from ragmeter.evaluation.unknowns import positive_items
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.run import QuestionResult

__all__ = ["ScoreInputs"]

# What answer_in_context@k reads of a result's extra (ragmeter.evaluation.unknowns).
_ANSWER_KEYS = ("answer_rank", "answer_unseen")


@dataclass
class ScoreInputs:
    """What the scorers read: judged rankings, answers, timings and verdicts of one run."""

    gold: GoldSet
    k: int
    level: str = "doc"
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    # Tuples of strings: the garbage collector stops walking them (issue 29.2).
    rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Passage level: judgments and rankings of the retrieved chunks, for precision@k.
    hit_qrels: dict[str, dict[str, int]] | None = None
    hit_rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Questions with answer_contains: what answer_in_context@k reads of their result.
    answer_results: dict[str, QuestionResult] = field(default_factory=dict)
    answers: dict[str, str | None] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    faithful: Mapping[str, bool] = field(default_factory=dict)
    # Items with something to find: the ranking metrics' means are over these.
    positive: set[str] = field(default_factory=set)
    # Whether the judgments are the caller's dicts (``start``'s ``qrels``): an item's is
    # copied before a grade joins it, and is then in ``owned``.
    shares: bool = False
    owned: set[str] = field(default_factory=set)
    # Questions whose retriever answered '' (nothing generated): answer checks leave them out.
    no_answer: set[str] = field(default_factory=set)
    # Passage level: labels beyond the gold set (item id -> chunk id -> grade).
    extra_labels: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        gold: GoldSet,
        *,
        level: str,
        k: int,
        qrels: Mapping[str, Mapping[str, int]] | None = None,
        faithful: Mapping[str, bool] | None = None,
    ) -> ScoreInputs:
        """Empty inputs for a run of ``gold`` (``qrels`` and ``faithful`` as
        ``score_results`` takes them)."""
        inputs = cls(gold=gold, k=k, level=level, faithful=faithful or {})
        if level == "passage":
            # In gold order, so means do not depend on the order questions finished in.
            inputs.qrels = {item.id: entry_qrels(item) for item in gold}
            inputs.hit_qrels = {item.id: {} for item in gold}
            inputs.extra_labels = qrels or {}
        elif qrels is None:
            inputs.qrels = gold.qrels()  # fresh dicts: no copy
        elif all(type(grades) is dict for grades in qrels.values()):
            # Shared with the caller (the run's Judgments reads them while it goes): an
            # item's judgments are copied only when a grade seen at retrieval time joins
            # them (:meth:`add`), not 100,000 dicts up front (issue 29.2).
            inputs.qrels = dict(qrels)  # type: ignore[arg-type]
            inputs.shares = True
        else:
            inputs.qrels = {i: dict(grades) for i, grades in qrels.items()}
        inputs.positive = positive_items(gold, qrels)
        return inputs

    def add(self, result: QuestionResult) -> None:
        """Take what scoring reads of one result (a failed or unknown question adds nothing)."""
        if result.item_id not in self.gold or result.error is not None:
            return
        item = self.gold[result.item_id]
        if result.extra.get("answer_empty"):
            self.no_answer.add(result.item_id)  # nothing was generated: left out
        if item.answer_contains:
            self.answers[result.item_id] = result.answer
            kept = {key: result.extra[key] for key in _ANSWER_KEYS if key in result.extra}
            self.answer_results[result.item_id] = QuestionResult(result.item_id, extra=kept)
        if self.level == "passage":
            self._passage(item, result)
        else:
            hits = result.hits
            keys = tuple([hit.doc for hit in hits] if self.level == "doc" else [h.id for h in hits])
            self.rankings[result.item_id] = keys
            judged = self.qrels.setdefault(result.item_id, {})
            # Grades seen at retrieval time (e.g. quote overlap without a chunk
            # inventory) join the judgments so recall and nDCG see them.
            for key, grade in zip(keys, result.extra.get("grades") or (), strict=False):
                if grade > judged.get(key, 0):
                    if self.shares and result.item_id not in self.owned:
                        self.owned.add(result.item_id)  # the caller's dict: copied first
                        judged = self.qrels[result.item_id] = dict(judged)
                    judged[key] = int(grade)
        if result.latency_ms is not None:
            self.latencies.append(result.latency_ms)

    def add_plain(self, item_id: str, keys: tuple[str, ...], latency: float | None) -> None:
        """:meth:`add` at doc level for a result without error, answer or answer check
        whose grades are those of these inputs' own judgments (``Tally.start``): its
        ranking ``keys`` (its hits' documents) and latency. Such grades never raise a
        judgment, so they are not read again (issue 29.2)."""
        if item_id not in self.gold:
            return
        self.rankings[item_id] = keys
        if item_id not in self.qrels:  # not setdefault: no empty dict made a question
            self.qrels[item_id] = {}
        if latency is not None:
            self.latencies.append(latency)

    def _passage(self, item: GoldItem, result: QuestionResult) -> None:
        """One question's passage-level judgments and rankings.

        Labels beyond the gold set (the judge's, keyed by chunk id): each labelled chunk
        that covers no entry becomes a relevant item of its own.
        """
        covered = result.extra.get("covers")
        if covered is None:
            covered = [covers(item, hit, Evidence())[0] for hit in result.hits]
        self.rankings[item.id] = tuple(entry_ranking(item, result.hits, covered))
        self.hit_rankings[item.id] = tuple([hit.id for hit in result.hits])
        qrels = self.qrels.setdefault(item.id, entry_qrels(item))
        if self.hit_qrels is None:
            self.hit_qrels = {}
        hits = self.hit_qrels.setdefault(item.id, {})
        hits.update(hit_qrels(item, result.hits, covered))
        docs = {rel.doc for rel in item.relevant}
        for key, grade in self.extra_labels.get(item.id, {}).items():
            if grade > 0 and key not in docs:
                qrels[f"{HIT}{key}"] = max(qrels.get(f"{HIT}{key}", 0), grade)
                hits[key] = max(hits.get(key, 0), grade)

    def close(self) -> None:
        """Every gold item judged (an item without a result keeps its gold judgments)."""
        if self.gold.ids <= self.qrels.keys() and (
            self.hit_qrels is None or self.gold.ids <= self.hit_qrels.keys()
        ):
            return  # every item has its judgments already: no pass over the gold set
        passage = self.level == "passage"
        for item in self.gold:
            self.qrels.setdefault(item.id, entry_qrels(item) if passage else {})
            if self.hit_qrels is not None:
                self.hit_qrels.setdefault(item.id, {})
