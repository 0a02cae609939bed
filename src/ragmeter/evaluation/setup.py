"""What the spec layer knows about a retriever beyond the retriever itself.

``evaluate()`` takes what a user passes; a retriever built from a spec (by
``jobs.py`` or ``sweep.py``) comes with more: the spec string to record, the
resolved config, and the corpus inventory (chunks, documents) that chunk-level
judgments need. ``RetrieverSetup`` carries these *with* the retriever, so they
are not parameters of ``evaluate()``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.documents import Chunk
from ragmeter.errors import InputError
from ragmeter.gold.goldset import GoldSet

__all__ = ["RetrieverSetup", "require_gold_docs"]


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
    missing = gold.missing_docs(doc_ids)
    named = {rel.doc_id for item in gold for rel in item.relevant}
    if named and set(missing) == named:
        raise InputError(
            f"none of the {len(named)} documents the gold set names is in the corpus "
            f"{where}: gold ids look like {', '.join(sorted(named)[:3])}; corpus ids "
            f"look like {', '.join(sorted(doc_ids)[:3])}. Point --corpus at the folder the "
            "gold ids are relative to, or fix the gold ids"
        )
    return missing


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
