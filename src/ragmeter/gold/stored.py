"""A stored gold snapshot read back without pydantic (issue 29.1).

A run keeps the gold set it was scored against as canonical records
(:meth:`GoldSet.to_records <ragmeter.gold.goldset.GoldSet.to_records>`, validated before they
were stored). A report of a 100,000-question run reads what it prints from them; validating
every item again through pydantic was nearly half of ``ragmeter show``. :func:`stored_items`
turns canonical records into light items with the attributes a report reads (``id``,
``question``, ``tags``, ``answer_contains``, ``relevant`` with ``doc``, ``quote``, ``chunk``,
``grade`` and ``doc_id``). A record that is not in canonical form (another writer, an edited
store) goes through :class:`~ragmeter.gold.items.GoldItem` as before, so a bad one is still a
:class:`~ragmeter.errors.GoldSetError` naming it.

>>> items = stored_items([{"id": "q1", "question": "?", "relevant": [{"chunk": "a.md#2",
...     "grade": 2}], "tags": ["faq"]}])
>>> items[0].relevant[0].doc_id, items[0].tags, items[0].answer_contains
('a.md', ('faq',), ())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ragmeter.errors import GoldSetError

__all__ = ["StoredItem", "StoredRelevance", "stored_items"]

#: The keys of a canonical record (``to_record``) and of its relevance entries.
_ITEM_KEYS = frozenset(
    ("id", "question", "relevant", "answer_contains", "reference_answer", "tags", "source",
     "status", "parent", "metadata")
)  # fmt: skip
_RELEVANCE_KEYS = frozenset(("doc", "quote", "chunk", "grade"))


class StoredRelevance(NamedTuple):
    """One judgment of a stored item (the attributes of :class:`~ragmeter.gold.items.Relevance`
    a report reads)."""

    doc: str | None
    quote: str | None
    chunk: str | None
    grade: int

    @property
    def doc_id(self) -> str:
        """The document this judgment is about (for a chunk: the part before the last ``#``)."""
        if self.doc is not None:
            return self.doc
        chunk = self.chunk or ""
        return chunk.rpartition("#")[0] or chunk


class StoredItem(NamedTuple):
    """One stored gold item: what a report reads of a :class:`~ragmeter.gold.items.GoldItem`."""

    id: str
    question: str
    tags: tuple[str, ...]
    answer_contains: tuple[str, ...]
    relevant: tuple[StoredRelevance, ...]
    #: ``(expected documents, gold entries)`` as a report's row spells them out
    #: (:func:`~ragmeter.evaluation.report.gold_fields`), built once here.
    row_fields: tuple[list[str], list[dict[str, Any]]] = ([], [])


def _relevance(entry: Any) -> StoredRelevance | None:
    if type(entry) is not dict or not entry.keys() <= _RELEVANCE_KEYS:
        return None
    doc, quote, chunk = entry.get("doc"), entry.get("quote"), entry.get("chunk")
    grade = entry.get("grade")
    if type(grade) is not int or not 0 <= grade <= 3 or (doc is None) == (chunk is None):
        return None
    if (quote is not None and doc is None) or not all(
        v is None or type(v) is str for v in (doc, quote, chunk)
    ):
        return None
    return StoredRelevance(doc, quote, chunk, grade)


def _fast(record: Any) -> StoredItem | None:
    """``record`` as a light item, or None when it is not in canonical form (its strings were
    checked when the gold set was validated and stored)."""
    if type(record) is not dict or not record.keys() <= _ITEM_KEYS:
        return None
    item_id, question = record.get("id"), record.get("question")
    tags, contains = record.get("tags", []), record.get("answer_contains", [])
    relevant = record.get("relevant", [])
    if type(item_id) is not str or type(question) is not str or not item_id or not question:
        return None
    if type(tags) is not list or type(contains) is not list or type(relevant) is not list:
        return None
    entries = []
    for entry in relevant:
        rel = _relevance(entry)
        if rel is None:
            return None
        entries.append(rel)
    expected = list(dict.fromkeys(rel.doc_id for rel in entries if rel.grade > 0))
    gold = [
        {"doc": rel.doc_id, "quote": rel.quote, "chunk": rel.chunk, "grade": rel.grade}
        for rel in entries
    ]
    return StoredItem(
        item_id, question, tuple(tags), tuple(contains), tuple(entries), (expected, gold)
    )


def stored_items(
    records: Sequence[Mapping[str, Any]], *, name: str = "stored gold set"
) -> list[Any]:
    """Light items of a stored gold snapshot, in order (a :class:`StoredItem` per canonical
    record, a validated :class:`~ragmeter.gold.items.GoldItem` for any other record).

    Raises :class:`~ragmeter.errors.GoldSetError` for an invalid record or a repeated id.
    """
    from ragmeter.gold.goldset import GoldSet

    out: list[Any] = []
    seen: set[str] = set()
    for record in records:
        item: Any = _fast(record)
        if item is None:  # not canonical: the full validation, with its error messages
            item = GoldSet.from_records([record], name=name).items[0]
        if item.id in seen:
            raise GoldSetError(f'{name}: duplicate item id "{item.id}"')
        seen.add(item.id)
        out.append(item)
    return out
