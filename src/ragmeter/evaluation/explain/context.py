"""What every probe reads: the stored run, its gold set, its retriever rebuilt, the corpus.

The run's own retriever is rebuilt from its record (``rebuild_retriever``, as a resume
does), so "asked again" means the same spec, corpus, chunker and id options. The
reference probes (BM25, dense, RM3, a re-chunk) search the run's corpus, or ``--corpus``
for a retriever the run did not build over one. Relevance is always the run's own rule:
:class:`~ragmeter.evaluation.scoring.Judgments` at the run's level, whose passage level is
:func:`ragmeter.evaluation.passages.covers` — there is no second coverage rule here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.corpus import Corpus
from ragmeter.documents import Chunk, Hit
from ragmeter.evaluation.report import RunReport
from ragmeter.evaluation.scoring import Judgments
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.run import QuestionResult

__all__ = ["Context", "Covering", "first_covering"]


@dataclass(frozen=True)
class Covering:
    """The first covering unit of a ranking: its rank (the run's rank rule) and hit."""

    rank: int
    hit: Hit


def first_covering(judgments: Judgments, item: GoldItem, hits: Sequence[Hit]) -> Covering | None:
    """The first hit of ``hits`` that the run's judgments count as relevant to ``item``.

    Its rank is its position in the list: a run stores its first k hits and scores only
    those (documents once each at doc level), so a unit counts for ``hit@k`` exactly when
    it is among the first k hits returned.

    >>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["b"]}])
    >>> j = Judgments.build(gold, "doc")
    >>> first_covering(j, gold["q"], [Hit("a#0", "a"), Hit("a#1", "a"), Hit("b#0", "b")]).rank
    3
    """
    for position, grade in enumerate(judgments.grades(item, hits)):
        if grade > 0:
            return Covering(position + 1, hits[position])
    return None


@dataclass
class Context:
    """A stored run and what the probes need to ask about it again."""

    report: RunReport
    gold: GoldSet
    judgments: Judgments
    #: The run's retriever rebuilt (``None``: it could not be, see ``Explanation.skipped``).
    retriever: Any
    #: The corpus the reference probes search (``None``: those probes are skipped).
    corpus: Corpus | None
    chunker: ChunkerConfig
    #: The run's chunk inventory when known (reference pipelines, or ``--corpus``).
    chunks: Sequence[Chunk] | None
    cache_dir: Path | None = None
    concurrency: int = 8
    progress: Callable[[int, int, Any], None] | None = None
    _resources: Any = field(default=None, repr=False)
    _spans: dict[tuple[str, int], tuple[int, int]] | None = field(default=None, repr=False)

    @property
    def run(self) -> Any:
        return self.report.run

    @property
    def k(self) -> int:
        return int(self.report.run.k)

    @property
    def results(self) -> Mapping[str, QuestionResult]:
        return self.report.results

    @property
    def reference(self) -> str | None:
        """``bm25``/``dense``/``hybrid`` when the run is a reference pipeline, else None."""
        if self.run.retriever == "bm25":
            return "bm25"
        pipeline = self.run.config.get("pipeline")
        if isinstance(pipeline, Mapping):
            return str(pipeline.get("retriever"))
        return None

    @property
    def plain_reference(self) -> bool:
        """True for a reference pipeline without a rewrite or re-rank stage."""
        pipeline = self.run.config.get("pipeline")
        if self.run.retriever == "bm25" and not isinstance(pipeline, Mapping):
            return True
        return (
            isinstance(pipeline, Mapping)
            and not pipeline.get("rewrite")
            and not (pipeline.get("rerank"))
        )

    def resources(self) -> Any:
        """Indexes over :attr:`corpus` with the run's chunker, built once (cached on disk)."""
        from ragmeter.pipelines.pipeline import PipelineResources

        if self._resources is None:
            self._resources = PipelineResources(self.corpus, self.cache_dir)
        return self._resources

    def bm25(self) -> Any:
        """The reference BM25 index over the corpus, chunked as the run was."""
        index, _ = self.resources().bm25(self.chunker)
        return index

    def quote_spans(self) -> Mapping[tuple[str, int], tuple[int, int]]:
        """Where each gold quote sits in its document (``GoldSet.quote_spans``), once."""
        if self._spans is None:
            documents = self.corpus.documents if self.corpus is not None else {}
            self._spans = dict(self.gold.quote_spans(documents))
        return self._spans

    def covering(self, item: GoldItem, hits: Sequence[Hit]) -> Covering | None:
        return first_covering(self.judgments, item, hits)

    def passage_texts(self, item: GoldItem) -> list[str]:
        """The text of each gold entry of ``item`` that is known: its quote, its chunk's
        text (from the inventory) or its document's text (from the corpus)."""
        by_id = {c.id: c.text for c in self.chunks or ()}
        documents = self.corpus.documents if self.corpus is not None else {}
        texts: list[str] = []
        for rel in item.relevant:
            if rel.grade <= 0:
                continue
            if rel.quote:
                texts.append(rel.quote)
            elif rel.chunk is not None and rel.chunk in by_id:
                texts.append(by_id[rel.chunk])
            elif rel.doc is not None and rel.doc in documents:
                texts.append(documents[rel.doc].text)
        return texts
