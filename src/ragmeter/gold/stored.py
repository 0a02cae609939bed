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

import json
import re
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn, cast, overload

from ragmeter.errors import GoldSetError, StoreError

__all__ = ["StoredGold", "StoredItem", "StoredRelevance", "expected_of", "stored_items"]

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


_DOC_GRADE = frozenset(("doc", "grade"))


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


_NONE: list[Any] = []  # a missing list (never changed)
_Light = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def _light(record: Any) -> _Light | None:
    """``(id, tags, answer_contains, expected documents)`` of a canonical record, or None when
    it is not in canonical form (its strings were checked when the gold set was validated and
    stored)."""
    if type(record) is not dict or not record.keys() <= _ITEM_KEYS:
        return None
    get = record.get
    item_id, question = get("id"), get("question")
    tags, contains, relevant = (
        get("tags", _NONE),
        get("answer_contains", _NONE),
        get("relevant", _NONE),
    )
    if type(item_id) is not str or type(question) is not str or not item_id or not question:
        return None
    if type(tags) is not list or type(contains) is not list or type(relevant) is not list:
        return None
    expected = []
    for entry in relevant:
        if type(entry) is dict and entry.keys() == _DOC_GRADE:  # the common shape, in fewer steps
            doc, grade = entry["doc"], entry["grade"]
            if type(doc) is not str or type(grade) is not int or not 0 <= grade <= 3:
                return None
        elif _canonical(entry):
            doc, grade = _doc_id(entry.get("doc"), entry.get("chunk")), entry["grade"]
        else:
            return None
        if grade > 0:
            expected.append(doc)
    unique = tuple(expected) if len(expected) < 2 else tuple(dict.fromkeys(expected))
    return item_id, tuple(tags) if tags else (), tuple(contains) if contains else (), unique


def _fast(record: Any) -> StoredItem | None:
    """``record`` as a light item, or None when it is not in canonical form."""
    light = _light(record)
    if light is None:
        return None
    item_id, tags, contains, expected = light
    return StoredItem(item_id, record["question"], tags, contains, record.get("relevant", []),
                      expected)  # fmt: skip


def _validated(record: Any, name: str) -> Any:
    """A record not in canonical form through the full validation, with its error messages."""
    from ragmeter.gold.goldset import GoldSet  # pydantic, only when needed

    return GoldSet.from_records([record], name=name).items[0]


class StoredGold(Sequence[Any]):
    """A stored gold snapshot read from its JSON text a record at a time (issue 29.1).

    What a report counts is kept in columns, by position: ``ids``, ``tags``,
    ``answer_contains`` and ``expected`` (the documents with a grade above 0, in order, once
    each); an item (:class:`StoredItem`, the question and its judgments) is decoded again
    from the text when it is read (``show`` of 100,000 questions reads the 25 it prints).
    Every record is checked as :func:`stored_items` checks it, and a record that is not in
    canonical form is validated at once (a bad one is a
    :class:`~ragmeter.errors.GoldSetError` naming it).

    >>> gold = StoredGold('[{"id":"q1","question":"?","relevant":[{"doc":"a.md","grade":1}]}]')
    >>> gold.ids, gold.expected, gold[0].question
    (['q1'], [('a.md',)], '?')
    """

    def __init__(self, text: str, *, name: str = "stored gold set") -> None:
        self.name = name
        self.ids: list[str] = []
        self.tags: list[tuple[str, ...]] = []
        self.answer_contains: list[tuple[str, ...]] = []
        self.expected: list[tuple[str, ...]] = []
        self._text = text
        self._items: dict[int, Any] = {}  # items built, by position
        starts: list[int] = []  # where each record starts in the text
        for start, record in _records(text):
            light = _light(record)
            if light is None:
                self._items[len(self.ids)] = item = _validated(record, name)
                light = (item.id, item.tags, item.answer_contains, expected_of(item))
            self.ids.append(light[0])
            self.tags.append(light[1])
            self.answer_contains.append(light[2])
            self.expected.append(light[3])
            starts.append(start)
        self._starts = array("q", starts)
        if len(set(self.ids)) != len(self.ids):
            seen: set[str] = set()
            repeated = next(i for i in self.ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise GoldSetError(f'{name}: duplicate item id "{repeated}"')

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        position = range(len(self))[index]
        item = self._items.get(position)
        if item is None:
            record, _ = json.JSONDecoder().raw_decode(self._text, self._starts[position])
            item = self._items[position] = _fast(record)
        return item

    def records(self) -> list[dict[str, Any]]:
        """The stored records, decoded anew (``GoldSet.from_records`` parses them)."""
        return cast(list[dict[str, Any]], json.loads(self._text))

    def questions(self) -> dict[str, str]:
        """Each item's question, by id (the records decoded again one at a time)."""
        built = self._items  # a record not in canonical form was validated: its item says
        return {
            item_id: built[p].question if p in built else record["question"]
            for p, (item_id, (_, record)) in enumerate(
                zip(self.ids, _records(self._text), strict=True)
            )
        }


def expected_of(item: Any) -> tuple[str, ...]:
    """The documents of an item's judgments with a grade above 0, in order, once each."""
    if isinstance(item, StoredItem):
        return item.expected
    relevant = item.relevant
    if len(relevant) == 1:  # most items: no generator, no dict
        return (relevant[0].doc_id,) if relevant[0].grade > 0 else ()
    return tuple(dict.fromkeys(rel.doc_id for rel in relevant if rel.grade > 0))


_SPACE = re.compile(r"[ \t\n\r]*")


def _records(text: str) -> Iterator[tuple[int, Any]]:
    """Each value of the JSON list ``text`` with where it starts, decoded one at a time (the
    whole list decoded at once is 100,000 records alive together); a text that is not a JSON
    list raises the decoder's error or :class:`~ragmeter.errors.StoreError`."""
    decode = json.JSONDecoder().raw_decode
    at = _skip(text, 0)
    if text[at : at + 1] != "[":
        _not_a_list(text)
    at = _skip(text, at + 1)
    end = at
    if text[at : at + 1] != "]":
        while True:
            record, end = decode(text, at)
            yield at, record
            after = text[end : end + 1]
            if after == ",":
                at = end + 1
                if text[at : at + 1] in _SPACES:
                    at = _skip(text, at)
                continue
            if after in _SPACES:
                end = _skip(text, end)
                if text[end : end + 1] == ",":
                    at = _skip(text, end + 1)
                    continue
            break
    if text[end : end + 1] != "]" or _skip(text, end + 1) != len(text):
        _not_a_list(text)


_SPACES = frozenset(" \t\n\r")


def _skip(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]  # matches anywhere


def _not_a_list(text: str) -> NoReturn:
    json.loads(text)  # the decoder's own error for a broken text
    raise StoreError("a stored gold set is not a JSON list")


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
            item = _validated(record, name)
        if item.id in seen:
            raise GoldSetError(f'{name}: duplicate item id "{item.id}"')
        seen.add(item.id)
        out.append(item)
    return out
