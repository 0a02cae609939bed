"""The gold set: questions with the documents and passages that answer them.

A gold set is a YAML or JSONL file with one item per question (see
``docs/gold-format.md``). Relevance is anchored to documents and passages
(``doc``, ``doc`` + ``quote``) rather than chunk ids, so one gold set stays valid
when the chunker changes; exact ``chunk`` ids are accepted too.

>>> gold = GoldSet.from_records([{"id": "q1", "question": "Refunds?",
...                               "relevant": [{"doc": "faq.md", "grade": 2}]}])
>>> gold.qrels()
{'q1': {'faq.md': 2}}

Every problem in a file becomes one ``GoldSetError`` naming the file, the line
(or item id) and the field; pydantic never reaches the user.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, KeysView, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.documents import Document
from ragmeter.errors import GoldSetError, located
from ragmeter.executors.collector import paused
from ragmeter.formats.text import text_problem
from ragmeter.gold.items import (
    ID_KEYS,
    MAX_GRADE,
    GoldItem,
    Relevance,
    explain,
    id_like,
    plain_item,
    to_record,
)
from ragmeter.gold.quotes import FoldedText, find_quote

_orjson: Any
try:  # optional: only ever makes the same bytes faster (_canonical_json)
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

YAML_SUFFIXES = (".yaml", ".yml")

__all__ = ["YAML_SUFFIXES", "GoldItem", "GoldSet", "Relevance"]


_KIND = "gold set"
_SHARE_TRIAL = 20_000  # items after which a set whose documents hardly repeat stops sharing
_QUOTE_PREVIEW = 60  # characters of a quote shown in an error message


def _records_hash(records: list[dict[str, Any]]) -> str:
    """sha256 of the records' canonical JSON (sorted keys, compact)."""
    return hashlib.sha256(_canonical_json(records)).hexdigest()


def _canonical_json(records: list[dict[str, Any]]) -> bytes:
    r"""``json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"))``
    as UTF-8 (lone surrogates kept), byte for byte: the gold set's hash is made of it.

    orjson writes the same bytes about 8 times faster (issue 29.2) for what it is given here
    without metadata: strings, small integers, lists and dicts with the field names as keys.
    Metadata may hold floats, which the two spell differently, so json writes those sets;
    and a lone surrogate, which orjson refuses.

    >>> _canonical_json([{"id": "é", "relevant": [{"grade": 1, "doc": 'a"b'}]}])
    b'[{"id":"\xc3\xa9","relevant":[{"doc":"a\\"b","grade":1}]}]'
    """
    if _orjson is not None and not any("metadata" in record for record in records):
        try:
            return bytes(_orjson.dumps(records, option=_orjson.OPT_SORT_KEYS))
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate
            pass
    text = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


class GoldSet:
    """An immutable, ordered collection of gold items.

    >>> gold = GoldSet.from_records([{"id": "a", "question": "Why?", "relevant": ["x.md"]}])
    >>> len(gold), "a" in gold, gold["a"].relevant[0].doc
    (1, True, 'x.md')
    """

    __slots__ = ("_by_id", "_hash", "_items", "_lines", "_name", "_path", "_top")

    def __init__(
        self,
        items: Iterable[GoldItem],
        *,
        path: str | Path | None = None,
        name: str | None = None,
        lines: Mapping[str, int] | None = None,
        _by_id: dict[str, GoldItem] | None = None,
    ) -> None:
        self._items = tuple(items)
        self._path = Path(path) if path is not None else None
        self._name = name or (self._path.stem if self._path is not None else "gold")
        self._lines = dict(lines or {})
        self._hash: str | None = None
        self._top: dict[str, int] | None = None
        if _by_id is not None:  # from_records: the items by id, checked (issue 29.2)
            self._by_id = _by_id
            return
        self._by_id = {}
        for item in self._items:
            if item.id in self._by_id:
                raise GoldSetError(self._locate(item.id, f'duplicate item id "{item.id}"'))
            self._by_id[item.id] = item

    items = property(lambda self: self._items, doc="The items, in file order.")
    path = property(lambda self: self._path, doc="The file the set was loaded from, if any.")
    name = property(lambda self: self._name, doc="A short name (the file stem by default).")

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[GoldItem]:
        return iter(self._items)

    def __getitem__(self, item_id: str) -> GoldItem:
        return self._by_id[item_id]

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._by_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoldSet) and self._items == other._items

    def __hash__(self) -> int:
        return hash(self.hash)

    def __repr__(self) -> str:
        return f"<GoldSet {self._name!r}: {len(self)} items>"

    def _locate(self, item_id: str, message: str) -> str:
        line = self._lines.get(item_id)
        if line is None:
            return located(_KIND, self._path or self._name, f"item {item_id}", message)
        return located(_KIND, self._path or self._name, line, f"item {item_id} {message}")

    @property
    def hash(self) -> str:
        """sha256 of the items' canonical JSON; equal for equal content in any file format."""
        if self._hash is None:
            self._hash = _records_hash(self.to_records())
        return self._hash

    @property
    def ids(self) -> KeysView[str]:
        """The item ids, in file order (a set-like view)."""
        return self._by_id.keys()

    def top_grades(self) -> Mapping[str, int]:
        """Each judged item's highest grade (items without judgments are left out), worked
        out once: which items have something to find (issue 29.2).

        >>> GoldSet.from_records([{"id": "a", "question": "?", "relevant": [{"doc": "x",
        ...     "grade": 0}, {"doc": "y", "grade": 2}]}, {"id": "b", "question": "?"}]).top_grades()
        {'a': 2}
        """
        if self._top is None:
            self.qrels()  # works them out on the way
        assert self._top is not None
        return self._top

    def nothing_to_find(self) -> list[str]:
        """Ids of the items judged, but only with grade 0: nothing to find."""
        return [item_id for item_id, top in self.top_grades().items() if top <= 0]

    @property
    def only_docs(self) -> bool:
        """True when every judgment names a whole document (evaluation defaults to doc level)."""
        return all(r.quote is None and r.chunk is None for i in self._items for r in i.relevant)

    def qrels(self) -> dict[str, dict[str, int]]:
        """Doc-level judgments ``{item_id: {doc_id: grade}}``, the highest grade per document.

        Items without judgments are left out (a qrels file cannot hold them).

        >>> GoldSet.from_records([{"id": "q", "question": "?", "relevant": [
        ...     {"doc": "a", "grade": 1}, {"doc": "a", "quote": "x", "grade": 3}]}]).qrels()
        {'q': {'a': 3}}
        """
        out: dict[str, dict[str, int]] = {}
        top: dict[str, int] = {}  # each judged item's highest grade (top_grades)
        for item in self._items:
            relevant = item.relevant
            if len(relevant) == 1:  # the common case, without a lookup (issue 29.2)
                rel = relevant[0]
                doc, grade = rel.doc, rel.grade
                out[item.id] = {rel.doc_id if doc is None else doc: grade if grade > 0 else 0}
                top[item.id] = grade
                continue
            if not relevant:
                continue
            docs = out[item.id] = {}
            for rel in relevant:
                docs[rel.doc_id] = max(rel.grade, docs.get(rel.doc_id, 0))
            top[item.id] = max([rel.grade for rel in relevant])
        self._top = top
        return out

    def to_records(self) -> list[dict[str, Any]]:
        """Plain dicts with canonical field names, defaults left out (grade always kept)."""
        with paused():  # the records make no cycles (issue 29.2)
            return list(map(to_record, self._items))

    def hashed_records(self) -> list[dict[str, Any]]:
        """:meth:`to_records`, also fixing :attr:`hash` from the same records when it is
        not known yet: one conversion for both (``save_gold``; issue 29.2).

        >>> gold = GoldSet.from_records([{"id": "a", "question": "?"}])
        >>> records = gold.hashed_records()
        >>> records == gold.to_records() and gold.hash == GoldSet(gold.items).hash
        True
        """
        records = self.to_records()
        if self._hash is None:
            self._hash = _records_hash(records)
        return records

    @classmethod
    def from_records(
        cls,
        records: Iterable[Any],
        *,
        path: str | Path | None = None,
        name: str | None = None,
        lines: Iterable[int | None] | None = None,
    ) -> GoldSet:
        """Validate plain dicts (aliases accepted) into a gold set.

        >>> GoldSet.from_records([{"_id": "1", "query": "Why?"}])["1"].question
        'Why?'
        """
        where = path if path is not None else (name or "records")
        line_list = list(lines) if lines is not None else None
        by_id: dict[str, GoldItem] = {}  # in file order: the items
        item_lines: dict[str, int] = {}
        shared: dict[str, Relevance] | None = {}  # the items' judgments of bare documents
        with paused():  # the items make no cycles (issue 29.2)
            for index, record in enumerate(records):
                line = line_list[index] if line_list is not None else None
                # The common record, without pydantic (issue 29.2).
                item = plain_item(record, shared)
                if item is None:
                    item = _validated(record, where, line, index)
                if index == _SHARE_TRIAL and shared is not None and 2 * len(shared) > index:
                    shared = None  # its documents hardly repeat: sharing would not pay
                if item.id in by_id:
                    first = item_lines.get(item.id)
                    both = f"lines {first} and {line}" if line is not None else "twice"
                    message = f'duplicate item id "{item.id}" ({both})'
                    at = line if line is not None else f"item {item.id}"
                    raise GoldSetError(located(_KIND, where, None if line else at, message))
                by_id[item.id] = item
                if line is not None:
                    item_lines[item.id] = line
        return cls(by_id.values(), path=path, name=name, lines=item_lines, _by_id=by_id)

    @classmethod
    def from_qrels(
        cls,
        qrels: Mapping[str, Mapping[str, int]],
        queries: Mapping[str, str],
        *,
        path: str | Path | None = None,
        name: str | None = None,
    ) -> GoldSet:
        """Build a gold set from TREC/BEIR judgments and the query texts.

        Negative grades become 0 (both mean "not relevant" to trec_eval).

        >>> GoldSet.from_qrels({"1": {"d9": 2}}, {"1": "What?"})["1"].relevant[0].grade
        2
        """
        records = []
        for qid, docs in qrels.items():
            if qid not in queries:
                raise GoldSetError(
                    located(
                        _KIND,
                        path or name or "qrels",
                        f"query {qid}",
                        "has judgments but no question text",
                    )
                )
            relevant = [{"doc": doc, "grade": max(grade, 0)} for doc, grade in docs.items()]
            records.append({"id": qid, "question": queries[qid], "relevant": relevant})
        return cls.from_records(records, path=path, name=name)

    def save(self, path: str | Path) -> None:
        """Write the set as YAML (``.yaml``/``.yml``) or JSONL (``.jsonl``) by suffix.

        >>> import pathlib, tempfile
        >>> from ragmeter.gold.files import load_gold
        >>> gold = GoldSet.from_records([{"id": "a", "question": "?"}])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     gold.save(pathlib.Path(folder) / "g.jsonl")
        ...     load_gold(pathlib.Path(folder) / "g.jsonl").hash == gold.hash
        True
        """
        path = Path(path)
        records = self.to_records()
        if path.suffix.lower() in YAML_SUFFIXES:
            import yaml

            dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
            text = yaml.dump(records, Dumper=dumper, sort_keys=False, allow_unicode=True)
        elif path.suffix.lower() == ".jsonl":
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        else:
            raise GoldSetError(located(_KIND, path, None, "save as .yaml, .yml or .jsonl"))
        path.write_text(text, encoding="utf-8")

    def quote_spans(
        self, documents: Mapping[str, Document]
    ) -> dict[tuple[str, int], tuple[int, int]]:
        """Find each quote in its document: ``(item_id, index) -> (start, end)``.

        Exact match first, then folded as the coverage rule folds (``quotes.find_quote``:
        case, spacing, Unicode form and Markdown syntax aside). Quotes whose document is
        not in ``documents`` are skipped (see ``missing_docs``).

        >>> gold = GoldSet.from_records([{"id": "q", "question": "?",
        ...     "relevant": [{"doc": "a", "quote": "THIRTY  days"}]}])
        >>> gold.quote_spans({"a": Document(id="a", text="Within thirty days.")})
        {('q', 0): (7, 18)}
        """
        spans: dict[tuple[str, int], tuple[int, int]] = {}
        folded: dict[str, FoldedText] = {}  # doc id -> its folded text, with offsets
        for item in self._items:
            for index, rel in enumerate(item.relevant):
                doc, quote = rel.doc, rel.quote
                if quote is None or doc is None or doc not in documents:
                    continue
                span = find_quote(documents[doc].text, quote, doc, folded)
                if span is None:
                    cut = len(quote) > _QUOTE_PREVIEW
                    preview = quote[:_QUOTE_PREVIEW] + "..." if cut else quote
                    message = f"relevant[{index}].quote: {json.dumps(preview, ensure_ascii=False)} not found in {rel.doc}"
                    raise GoldSetError(self._locate(item.id, message))
                spans[(item.id, index)] = span
        return spans

    def missing_docs(self, doc_ids: Collection[str]) -> dict[str, list[str]]:
        """Documents named by the gold set that are not in ``doc_ids``, with the items naming them.

        >>> GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["a", "b"]}]).missing_docs({"a"})
        {'b': ['q']}
        """
        missing: dict[str, list[str]] = {}
        for item in self._items:
            for rel in item.relevant:
                if rel.doc_id not in doc_ids:
                    ids = missing.setdefault(rel.doc_id, [])
                    if not ids or ids[-1] != item.id:
                        ids.append(item.id)
        return missing

    def summary(self) -> dict[str, Any]:
        """Counts for ``ragmeter gold check``: items, tags, sources, judgments per question...

        >>> GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["a"]}]).summary()["items"]
        1
        """
        judged = [len(item.relevant) for item in self._items]
        grades: Counter[int] = Counter()
        for item in self._items:
            grades.update({rel.grade for rel in item.relevant})
        relevance = [rel for item in self._items for rel in item.relevant]
        return {
            "items": len(self._items),
            "tags": dict(Counter(t for i in self._items for t in i.tags).most_common()),
            "sources": dict(Counter(i.source or "unset" for i in self._items).most_common()),
            "judged_per_item": {
                "min": min(judged, default=0),
                "median": statistics.median(judged) if judged else 0,
                "max": max(judged, default=0),
            },
            "items_without_judgments": judged.count(0),
            # Judged, but only grade 0: nothing to find, left out of retrieval means.
            "items_with_nothing_to_find": self.nothing_to_find(),
            "items_with_answer_checks": sum(1 for i in self._items if i.answer_contains),
            "quote_relevance": sum(1 for r in relevance if r.quote is not None),
            "chunk_relevance": sum(1 for r in relevance if r.chunk is not None),
            "items_per_grade": {g: grades[g] for g in range(MAX_GRADE + 1)},
        }


def _validated(record: Any, where: str | Path, line: int | None, index: int) -> GoldItem:
    """``record`` through ``GoldItem`` validation, a problem as one located message."""
    at: str | int = line if line is not None else f"item {index + 1}"
    if not isinstance(record, Mapping):
        kind = type(record).__name__
        raise GoldSetError(located(_KIND, where, at, f"expected a mapping, got {kind}"))
    raw_id = id_like(next((record[k] for k in ID_KEYS if k in record), None))
    if isinstance(raw_id, str) and text_problem(raw_id) is not None:
        raw_id = json.dumps(raw_id)  # escaped, so the message cannot rewrite a terminal
    label = ""
    if isinstance(raw_id, str) and line is not None:
        label = f"item {raw_id} "
    elif isinstance(raw_id, str):
        at = f"item {raw_id}"
    try:
        return GoldItem.model_validate(record)
    except ValidationError as error:
        raise GoldSetError(located(_KIND, where, at, label + explain(error))) from None
