"""What the spec layer knows about a retriever beyond the retriever itself.

``evaluate()`` takes what a user passes; a retriever built from a spec (by
``jobs.py`` or ``sweep.py``) comes with more: the spec string to record, the
resolved config, and the corpus inventory (chunks, documents) that chunk-level
judgments need. ``RetrieverSetup`` carries these *with* the retriever, so they
are not parameters of ``evaluate()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.documents import Chunk

__all__ = ["RetrieverSetup"]


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
