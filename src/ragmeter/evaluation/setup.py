"""What the spec layer knows about a retriever beyond the retriever itself.

``evaluate()`` takes what a user passes; a retriever built from a spec (by
``jobs.py`` or ``sweep.py``) comes with more: the spec string to record, the
resolved config, and the corpus inventory (chunks, documents) that chunk-level
judgments need. ``RetrieverSetup`` carries these *with* the retriever, so they
are not parameters of ``evaluate()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.documents import Chunk
from ragmeter.errors import ConfigError, InputError
from ragmeter.evaluation.scoring import Level
from ragmeter.executors.base import Executor, LocalExecutor
from ragmeter.executors.local import DEFAULT_CONCURRENCY
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers.resolver import IdResolver, gold_spellings

__all__ = [
    "RetrieverSetup",
    "check_documents",
    "check_metrics",
    "gold_documents",
    "min_overlap_of",
    "one_spelling",
    "require_gold_docs",
    "with_corpus",
]


def require_gold_docs(gold: GoldSet, doc_ids: Collection[str], where: str) -> dict[str, list[str]]:
    """The gold documents missing from ``doc_ids``; an error when every one is (issue 14.3).

    Not one gold document in the corpus means every question would score 0: that is a
    corpus pointed at the wrong folder or ids spelled another way, never a result.
    ``where`` names the corpus in the message.

    >>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["a.md", "b.md"]}])
    >>> require_gold_docs(gold, {"a.md"}, "docs/")
    {'b.md': ['q']}
    >>> require_gold_docs(gold, {"x.md"}, "docs/")
    Traceback (most recent call last):
    ...
    ragmeter.errors.InputError: none of the 2 documents the gold set names is in the corpus docs/: \
gold ids look like a.md, b.md; corpus ids look like x.md. Point --corpus at the folder the gold \
ids are relative to, or fix the gold ids
    """
    named = {rel.doc_id for item in gold for rel in item.relevant}
    # Read through the one id resolver: ./a.md, a\\b.md or another case name the same document.
    found = IdResolver(gold=named, corpus=list(doc_ids)).gold_in_corpus().values()
    missing = gold.missing_docs({*doc_ids, *found})
    if named and set(missing) == named:
        raise InputError(
            f"none of the {len(named)} documents the gold set names is in the corpus "
            f"{where}: gold ids look like {', '.join(sorted(named)[:3])}; corpus ids "
            f"look like {', '.join(sorted(doc_ids)[:3])}. Point --corpus at the folder the "
            "gold ids are relative to, or fix the gold ids"
        )
    return missing


def gold_documents(gold: GoldSet, documents: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``documents`` also under the gold set's spelling of their ids (the one id resolver),
    so a quote is found in its document however either side spells the id (``None`` stays).

    >>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["./a.md"]}])
    >>> sorted(gold_documents(gold, {"a.md": "text"}))
    ['./a.md', 'a.md']
    """
    if documents is None:
        return None
    named = {rel.doc_id for item in gold for rel in item.relevant}
    aliases = IdResolver(gold=named, corpus=list(documents)).gold_in_corpus()
    return {**documents, **{g: documents[c] for c, g in aliases.items() if g not in documents}}


def one_spelling(
    gold: GoldSet, documents: Collection[str] | None
) -> tuple[GoldSet, list[str], list[str]]:
    """``gold`` with each document spelled one way, and the notes and warnings to store.

    A gold set naming one document two ways (``docs/a.md`` in one item, ``a.md`` or
    ``./a.md`` in another) used to match only the spelling the hits resolved to: a silent
    miss for the other items. Spellings the one id resolver reads as one document (with
    ``documents``, the corpus ids, to confirm a folder prefix or case) become one id (a note
    says which); two that only the corpus could tell apart stay two, with a warning.

    >>> gold = GoldSet.from_records([{"id": "q1", "question": "?", "relevant": ["docs/a.md"]},
    ...                              {"id": "q2", "question": "?", "relevant": ["./a.md"]}])
    >>> one, notes, warnings = one_spelling(gold, ["a.md"])
    >>> [r.doc for item in one for r in item.relevant], notes[0][:62]
    (['a.md', 'a.md'], 'the gold set spells 1 document(s) more than one way, scored as')
    >>> one_spelling(gold, None)[2][0][:71]
    "the gold set names 'docs/a.md' and './a.md', which may be one document:"
    """
    named = [rel.doc for item in gold for rel in item.relevant if rel.doc is not None]
    spelled = gold_spellings(named, documents)
    notes, warnings = [], []
    if spelled.merged:
        shown = ", ".join(f"{d!r} -> {one!r}" for d, one in list(spelled.merged.items())[:5])
        ones = len(set(spelled.merged.values()))
        notes.append(f"the gold set spells {ones} document(s) more than one way, scored as one: "
                     f"{shown}")  # fmt: skip
    for one, other in spelled.apart:
        warnings.append(
            f"the gold set names {one!r} and {other!r}, which may be one document: without "
            "the corpus ragmeter cannot tell, so they are scored as two (a hit on one is a "
            "miss for the items naming the other); pass --corpus DIR, or spell them one way"
        )
    if not spelled.merged:
        return gold, notes, warnings

    def respelled(item: Any) -> Any:
        relevant = tuple(
            rel.model_copy(update={"doc": spelled.merged.get(rel.doc, rel.doc)})
            if rel.doc is not None
            else rel
            for rel in item.relevant
        )
        return item.model_copy(update={"relevant": relevant})

    return GoldSet(map(respelled, gold), path=gold.path, name=gold.name), notes, warnings


@dataclass(frozen=True, slots=True)
class RetrieverSetup:
    """A retriever plus the spec layer's facts about it; pass it as ``evaluate()``'s retriever.

    ``spec`` is stored as the run's retriever (default: the retriever's own spec or
    name), ``config`` is merged into the run's config, and ``chunks``/``documents``
    are the corpus inventory for chunk-level judgments.

    >>> import ragmeter
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> setup = RetrieverSetup(lambda q, k: [{"doc": "refunds.md"}], spec="mine:v2")
    >>> ragmeter.evaluate(gold, setup).run.retriever
    'mine:v2'
    """

    retriever: Any
    spec: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    chunks: Sequence[Chunk] | None = None
    documents: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How ``evaluate()`` runs and records a run, as one value: its arguments other than
    the gold set, the retriever, the store and the callbacks (``EvalJob`` fills it).

    ``executor`` is an ``Executor`` object (``ragmeter.executors``), never a name.
    """

    k: int = 10
    name: str | None = None
    note: str = ""
    level: Level | None = None
    metrics: Sequence[str] | None = None
    min_overlap: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float | None = None
    resume: int | str | None = None
    commit: str | None = None
    executor: Executor = field(default_factory=LocalExecutor)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"k must be at least 1, got {self.k}")


def check_metrics(metrics: Sequence[str], gold: Any) -> None:
    """Refuse, before any question is asked, a metric this run could never compute.

    Unknown names, ``alpha_ndcg`` (it needs subtopic qrels, which a gold set has not) and an
    ``err(max_grade=G)`` below the gold set's top grade would otherwise fail only after every
    question was retrieved (issue 16.2).
    """
    from ragmeter.metrics import parse_metric

    parsed = [parse_metric(name) for name in metrics]
    for m in parsed:
        if m.name == "alpha_ndcg":
            raise ConfigError(
                f"{m} needs subtopic qrels, which a gold set does not carry: score it with "
                "ragmeter metrics --subtopic-qrels"
            )
    errs = [m for m in parsed if m.name == "err"]
    if errs and isinstance(gold, GoldSet):
        top = max((r.grade for item in gold for r in item.relevant), default=0)
        for m in errs:
            if top > int(m.param("max_grade")):
                raise ConfigError(
                    f"{m}: the gold set has grade {top}, above max_grade="
                    f"{m.param('max_grade')}; set max_grade to the top grade of its scale"
                )


def with_corpus(setup: RetrieverSetup, corpus: Any) -> RetrieverSetup:
    """``setup`` with ``evaluate(corpus=...)``'s documents, as ``--corpus`` gives them.

    ``corpus`` is a folder or JSONL path, a :class:`~ragmeter.corpus.Corpus` or a mapping
    ``{doc id: Document}``. Hits' spans are then read from its documents (the coverage rule
    in ``docs/levels.md``), and, for a folder, absolute paths under it become
    corpus-relative ids, as on the command line.

    >>> from ragmeter.documents import Document
    >>> setup = with_corpus(RetrieverSetup(lambda q, k: []), {"a.md": Document("a.md", "A.")})
    >>> list(setup.documents or {})
    ['a.md']
    """
    if corpus is None:
        return setup
    if setup.documents is not None:
        raise ConfigError("pass the corpus once: as corpus= or as RetrieverSetup(documents=...)")
    from ragmeter.corpus import Corpus, load_corpus

    loaded = load_corpus(corpus) if isinstance(corpus, str | Path) else corpus
    documents = loaded.documents if isinstance(loaded, Corpus) else loaded
    if not isinstance(documents, Mapping):
        raise ConfigError(
            "corpus= takes a folder or JSONL path, a Corpus or a {doc id: Document} mapping, "
            f"not {type(corpus).__name__}"
        )
    retriever = setup.retriever
    root = getattr(loaded, "path", None)
    if not isinstance(retriever, str) and root and Path(root).is_dir():
        from ragmeter.retrievers import as_retriever

        retriever = as_retriever(retriever, spec=setup.spec, doc_root=[root])
    return dataclasses.replace(setup, retriever=retriever, documents=documents)


def check_documents(gold: GoldSet, documents: Mapping[str, Any] | None) -> None:
    """The spec path's check (``jobs.py``) for a corpus passed from Python (issue 14.3):
    a corpus holding none of the gold documents stops before any run is stored."""
    if documents is not None:
        require_gold_docs(gold, documents, "given as RetrieverSetup(documents=...)")


def min_overlap_of(config: Mapping[str, Any] | None) -> float:
    """The coverage rule's share a run's config holds (``min_overlap``), else the default.

    >>> min_overlap_of({}), min_overlap_of({"min_overlap": 0.6})
    (0.5, 0.6)
    """
    from ragmeter.gold.quotes import DEFAULT_MIN_OVERLAP

    return float((config or {}).get("min_overlap") or DEFAULT_MIN_OVERLAP)
