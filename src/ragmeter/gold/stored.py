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
        return _doc_id(self.doc, self.chunk)


class StoredItem:
    """One stored gold item: what a report reads of a :class:`~ragmeter.gold.items.GoldItem`.

    Its judgments are checked when it is read from the store; ``relevant`` and
    ``row_fields`` are built the first time they are read (a report of 100,000 questions
    builds them for the rows it prints, issue 29.1)."""

    __slots__ = (
        "_entries", "_expected", "_fields", "_relevant", "answer_contains", "id", "question", "tags"
    )  # fmt: skip

    def __init__(
        self,
        item_id: str,
        question: str,
        tags: tuple[str, ...],
        answer_contains: tuple[str, ...],
        entries: Sequence[Mapping[str, Any]],
        expected: tuple[str, ...] | None = None,
    ) -> None:
        self.id, self.question, self.tags = item_id, question, tags
        self.answer_contains = answer_contains
        self._entries = entries  # canonical relevance records, checked by _fast
        self._relevant: tuple[StoredRelevance, ...] | None = None
        self._expected = expected  # None: worked out from the entries when read
        self._fields: tuple[list[str], list[dict[str, Any]]] | None = None

    def __repr__(self) -> str:
        return f"StoredItem(id={self.id!r}, question={self.question!r})"

    @property
    def relevant(self) -> tuple[StoredRelevance, ...]:
        """The judgments, as :class:`StoredRelevance`."""
        if self._relevant is None:
            self._relevant = tuple(
                StoredRelevance(e.get("doc"), e.get("quote"), e.get("chunk"), e["grade"])
                for e in self._entries
            )
        return self._relevant

    @property
    def expected(self) -> tuple[str, ...]:
        """The documents with a grade above 0, in order, once each."""
        if self._expected is None:
            self._expected = tuple(
                dict.fromkeys(
                    _doc_id(e.get("doc"), e.get("chunk")) for e in self._entries if e["grade"] > 0
                )
            )
        return self._expected

    @property
    def row_fields(self) -> tuple[list[str], list[dict[str, Any]]]:
        """``(expected documents, gold entries)`` as a report's row spells them out
        (:func:`~ragmeter.evaluation.report.gold_fields`)."""
        if self._fields is None:
            gold = [
                {"doc": rel.doc_id, "quote": rel.quote, "chunk": rel.chunk, "grade": rel.grade}
                for rel in self.relevant
            ]
            self._fields = (list(self.expected), gold)
        return self._fields


def _doc_id(doc: str | None, chunk: str | None) -> str:
    if doc is not None:
        return doc
    chunk = chunk or ""
    return chunk.rpartition("#")[0] or chunk


def _canonical(entry: Any) -> bool:
    """``entry`` is a canonical relevance record (``Relevance.to_record``)."""
    if type(entry) is not dict or not entry.keys() <= _RELEVANCE_KEYS:
        return False
    doc, quote, chunk = entry.get("doc"), entry.get("quote"), entry.get("chunk")
    grade = entry.get("grade")
    if type(grade) is not int or not 0 <= grade <= 3 or (doc is None) == (chunk is None):
        return False
    return (quote is None or doc is not None) and all(
        v is None or type(v) is str for v in (doc, quote, chunk)
    )


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
    expected = []
    for entry in relevant:
        if not _canonical(entry):
            return None
        if entry["grade"] > 0:
            expected.append(_doc_id(entry.get("doc"), entry.get("chunk")))
    unique = tuple(expected) if len(expected) < 2 else tuple(dict.fromkeys(expected))
    return StoredItem(item_id, question, tuple(tags), tuple(contains), relevant, unique)


def stored_items(
    records: Sequence[Mapping[str, Any]], *, name: str = "stored gold set"
) -> list[Any]:
    """Light items of a stored gold snapshot, in order (a :class:`StoredItem` per canonical
    record, a validated :class:`~ragmeter.gold.items.GoldItem` for any other record).

    Raises :class:`~ragmeter.errors.GoldSetError` for an invalid record or a repeated id.
    """
    out: list[Any] = []
    seen: set[str] = set()
    for record in records:
        item: Any = _fast(record)
        if item is None:  # not canonical: the full validation, with its error messages
            from ragmeter.gold.goldset import GoldSet  # pydantic, only when needed

            item = GoldSet.from_records([record], name=name).items[0]
        if item.id in seen:
            raise GoldSetError(f'{name}: duplicate item id "{item.id}"')
        seen.add(item.id)
        out.append(item)
    return out
