"""A precomputed run file (TREC or JSONL) as a retriever: no retrieval happens.

A run is keyed by query id, so this adapter is looked up by the gold item's
id rather than by the question text: ``evaluate()`` sees ``by_item_id`` and
calls :meth:`RunFileRetriever.retrieve_for`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.retrievers.ids import DocIdentity, Notes

__all__ = ["RunFileRetriever", "rank_run"]


def rank_run(ranking: Mapping[str, float] | Sequence[str]) -> list[Hit]:
    """Order one query's run entries as trec_eval does.

    Scored entries go by decreasing score, ties by decreasing doc id (trec_eval's
    rule, so our metrics agree with it); an unscored list keeps its order.

    >>> [h.doc for h in rank_run({"d1": 1.0, "d2": 3.0, "d3": 1.0})]
    ['d2', 'd3', 'd1']
    >>> [h.doc for h in rank_run(["d9", "d1"])]
    ['d9', 'd1']
    """
    if isinstance(ranking, Mapping):
        ordered = sorted(ranking.items(), key=lambda item: (item[1], item[0]), reverse=True)
        return [Hit(id=doc, doc=doc, score=float(score)) for doc, score in ordered]
    return [Hit(id=doc, doc=doc) for doc in ranking]


class RunFileRetriever:
    """Serve the rankings of a TREC (``qid Q0 doc rank score tag``) or JSONL run.

    A gold item missing from the run gets no hits: it scores 0 and stays in
    the mean, as trec_eval's ``-c`` does.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "bm25.trec"
    >>> _ = path.write_text("q1 Q0 d7 1 9.5 bm25\\nq1 Q0 d2 2 8.0 bm25\\n")
    >>> r = RunFileRetriever(path)
    >>> [h.doc for h in r.retrieve_for("q1", "ignored", 1)], r.retrieve_for("q9", "", 5)
    (['d7'], [])
    """

    is_async = False
    by_item_id = True

    def __init__(
        self, path: str | Path, *, spec: str | None = None, identity: DocIdentity | None = None
    ) -> None:
        self.path = Path(path)
        self.spec = spec or f"run:{path}"
        # A run names documents directly; --doc-root turns absolute paths into ids.
        self.identity = identity or DocIdentity()
        self.notes: Notes = self.identity.notes
        if not self.path.is_file():
            raise ConfigError(f"run file {path} not found")
        from ragmeter.formats.trec import read_run  # the run reader lives with the formats

        raw = read_run(self.path)
        self._rankings: dict[str, list[Hit]] = {
            str(qid): self._relative(rank_run(ranking)) for qid, ranking in raw.items()
        }
        self.config: Mapping[str, Any] = {
            "type": "run",
            "path": str(self.path),
            "sha256": hashlib.sha256(self.path.read_bytes()).hexdigest(),
            "queries": len(self._rankings),
        }

    def __repr__(self) -> str:
        return f"RunFileRetriever({str(self.path)!r})"

    def _relative(self, hits: list[Hit]) -> list[Hit]:
        if not self.identity.roots:
            return hits
        out = []
        for hit in hits:
            doc = self.identity.relative(hit.doc)
            out.append(hit if doc == hit.doc else Hit(id=doc, doc=doc, score=hit.score))
        return out

    @property
    def query_ids(self) -> frozenset[str]:
        """The query ids the run holds (to warn about gold items it lacks)."""
        return frozenset(self._rankings)

    def retrieve_for(self, item_id: str, question: str, k: int) -> list[Hit]:
        """The run's top ``k`` hits for gold item ``item_id`` (``[]`` if absent)."""
        return list(self._rankings.get(item_id, ())[:k])

    async def aretrieve_for(self, item_id: str, question: str, k: int) -> list[Hit]:
        """Async twin of :meth:`retrieve_for` (a dict look-up, nothing awaits)."""
        return self.retrieve_for(item_id, question, k)

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """A run cannot answer a new question; look items up with :meth:`retrieve_for`."""
        raise RetrieverError(
            f"{self.spec} holds precomputed rankings keyed by gold item id: "
            "name the item (e.g. --item ID) instead of a question"
        )

    async def aretrieve(self, question: str, k: int) -> list[Hit]:
        """Async twin of :meth:`retrieve` (always fails the same way)."""
        return self.retrieve(question, k)

    def close(self) -> None:
        """Nothing to release: the run is read into memory."""
