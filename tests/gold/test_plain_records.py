"""Issue 29.2: a plain gold record (a ``dict`` of clean strings with ``relevant`` documents) is
built without pydantic's per-item validation; it must give the very items (or the very error)
the validated path gives. The validated path is reached with the same fields in a read-only
mapping, which the short path does not take."""

from __future__ import annotations

import itertools
from types import MappingProxyType
from typing import Any

from ragmeter.errors import GoldSetError
from ragmeter.gold import items
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.items import GoldItem, plain_item

MISSING = "<missing>"
IDS: list[Any] = ["q1", "", " ", "q\tx", "q\x1b", "q\ud800", "qé", 7, True, None, MISSING]
QUESTIONS: list[Any] = ["Why?", "", "a\nb", "\x00", 3, MISSING]
DOCS: list[Any] = ["a.md", "", "  ", "a\tb", "a\x1bb", 5, None, MISSING]
QUOTES: list[Any] = ["some words", "line\x07bell", " ", "\ud800", 4, None, MISSING]
GRADES: list[Any] = [0, 1, 3, 4, -1, True, 2.0, "1", MISSING]
EXTRA: list[dict[str, Any]] = [{}, {"chunk": "a.md#1"}, {"doc_id": "b"}]


def _entries(
    docs: list[Any] = DOCS,
    quotes: list[Any] = QUOTES,
    grades: list[Any] = GRADES,
    extras: list[dict[str, Any]] = EXTRA,
) -> list[Any]:
    """Relevance entries: bare ids and dicts of every combination given."""
    out: list[Any] = ["a.md", "", 9, ["a.md"]]
    for doc, quote, grade, extra in itertools.product(docs, quotes, grades, extras):
        entry = {
            name: value
            for name, value in (("doc", doc), ("quote", quote), ("grade", grade))
            if value != MISSING
        }
        out.append(entry | extra)
    return out


def _records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    relevants: list[Any] = [MISSING, [], (), None, "a.md", {"doc": "a.md"}]
    relevants += [[entry] for entry in _entries()]
    relevants += [["a.md", {"doc": "b.md", "grade": 2}], ["a.md", {"doc": 5}]]
    # Entries the short path takes (and a few it does not), under every id and question.
    usual = _entries(["a.md", "a\tb"], ["some words", "line\x07bell", None, MISSING],
                     [0, 3, True, MISSING], [{}])  # fmt: skip
    for ident, question, entry in itertools.product(IDS, QUESTIONS, usual):
        records.append({"id": ident, "question": question, "relevant": [entry]})
    for relevant in relevants:
        records.append({"id": "q1", "question": "Why?", "relevant": relevant})
    for extra in ({"tags": ["x"]}, {"query": "Why?"}, {"_id": "q2"}, {"surprise": 1}):
        records.append({"id": "q1", "question": "Why?", "relevant": ["a.md"]} | extra)
    return [{k: v for k, v in record.items() if v != MISSING} for record in records]


def _outcome(record: Any) -> tuple[Any, ...] | str:
    """Everything of the item a gold set holds (values, their types and order, the fields
    set), or the error message."""
    try:
        (item,) = GoldSet.from_records([record], name="t")
    except GoldSetError as error:
        return f"error: {error}"
    return _outcome_of(item)


def _outcome_of(item: GoldItem) -> tuple[Any, ...]:
    relevant = [(r.__dict__, list(r.__dict__), r.model_fields_set) for r in item.relevant]
    return (
        repr(item),
        item.__dict__,
        list(item.__dict__),
        item.model_fields_set,
        relevant,
        [type(r) for r in item.relevant],
        type(item.relevant),
        item.__pydantic_extra__,
        item.__pydantic_private__,
        hash(item),
    )


def test_a_plain_record_gives_what_validation_gives() -> None:
    short = 0
    records = _records()
    for record in records:
        if plain_item(record) is not None:
            short += 1
        assert _outcome(record) == _outcome(MappingProxyType(record)), record
    # Both paths are exercised, each many times.
    assert len(records) > 3000
    assert 150 < short < len(records) - 3000


def test_plain_items_equal_validated_ones_and_hash_the_same() -> None:
    records = [
        {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"d{i % 7}"}, "x.md"]}
        for i in range(3000)
    ]
    fast = GoldSet.from_records(records, name="s")
    validated = GoldSet([GoldItem.model_validate(r) for r in records], name="s")
    assert list(fast) == list(validated)
    assert fast.hash == validated.hash
    assert fast.to_records() == validated.to_records()


def test_a_duplicate_id_is_named_the_same_on_either_path() -> None:
    plain = {"id": "q1", "question": "Why?"}
    for first, second in itertools.product([plain, MappingProxyType(plain)], repeat=2):
        try:
            GoldSet.from_records([first, second], name="t")
        except GoldSetError as error:
            assert str(error) == 'gold set t item q1: duplicate item id "q1" (twice)'
        else:
            raise AssertionError("a duplicate id was accepted")
        try:
            GoldSet.from_records([first, second], name="t", lines=[3, 8])
        except GoldSetError as error:
            assert str(error) == 'gold set t: duplicate item id "q1" (lines 3 and 8)'


def test_the_short_path_is_on_and_gives_what_validation_gives_on_this_pydantic() -> None:
    """Issue 29.2: the import checks only the layout (``_plain_fits``: slots, field order,
    defaults), so it builds no validator; the value check it used to run at import is run
    here, with the records above, on the installed pydantic."""
    assert items._PLAIN
    assert items._plain_is_validated()


def test_items_sharing_their_set_fields_keep_their_own_on_a_copy() -> None:
    """Plain items share one set of set fields per spelling (issue 29.2): a copy with an
    update owns its set, so the other items still say what their records gave."""
    gold = GoldSet.from_records(
        [{"id": f"q{i}", "question": "?", "relevant": ["a"]} for i in range(3)]
    )
    first, second = gold.items[0], gold.items[1]
    assert first.model_fields_set is second.model_fields_set  # shared, as intended
    copied = first.model_copy(update={"tags": ("x",)})
    rel = first.relevant[0].model_copy(update={"grade": 2})
    assert copied.model_fields_set == {"id", "question", "relevant", "tags"}
    assert rel.model_fields_set == {"doc", "grade"}
    assert second.model_fields_set == {"id", "question", "relevant"}
    assert second.relevant[0].model_fields_set == {"doc"}
    assert GoldItem.model_validate(second.model_dump()) == second


def test_items_of_one_gold_set_sharing_judgments_are_what_validation_gives() -> None:
    """Issue 29.2: within one gold set, the items naming the same bare document (``"a.md"`` or
    ``{"doc": "a.md"}``, grade 1 by default) share one frozen ``Relevance``; every item is
    still what validation gives it, and a judgment spelled otherwise is its own."""
    entries = _entries(["a.md", "b.md", "", "a\tb", 5], ["some words", MISSING], [1, 2, MISSING])
    entries += ["a.md", "b.md", {"doc": "a.md"}, {"doc": "b.md"}, {"doc": None}, {"doc": ["x"]}]
    for first, second in itertools.product(entries, repeat=2):
        records = [
            {"id": "q1", "question": "Why?", "relevant": [first, second]},
            {"id": "q2", "question": "How?", "relevant": [second]},
            {"id": "q3", "question": "Who?", "relevant": [first, "a.md", second]},
        ]
        shared = _gold_outcome(records)
        assert shared == _gold_outcome([MappingProxyType(r) for r in records]), records
    gold = GoldSet.from_records(
        [{"id": f"q{i}", "question": "?", "relevant": ["a.md", {"doc": "a.md"}]} for i in range(3)]
        + [{"id": "q9", "question": "?", "relevant": [{"doc": "a.md", "grade": 1}]}]
    )
    made = [rel for item in gold for rel in item.relevant]
    assert all(rel is made[0] for rel in made[:6])  # one judgment, shared
    assert made[6] == made[0] and made[6] is not made[0]  # {"doc", "grade"} set: its own
    assert made[6].model_fields_set == {"doc", "grade"} and made[0].model_fields_set == {"doc"}
    other = GoldSet.from_records([{"id": "q1", "question": "?", "relevant": ["a.md"]}])
    assert other.items[0].relevant[0] is not made[0]  # shared within a gold set only


def _gold_outcome(records: list[Any]) -> list[tuple[Any, ...]] | str:
    try:
        gold = GoldSet.from_records(records, name="t")
    except GoldSetError as error:
        return f"error: {error}"
    return [_outcome_of(item) for item in gold]


def test_a_set_whose_documents_hardly_repeat_stops_sharing_and_gives_the_same_items() -> None:
    """Issue 29.2: sharing costs a lookup per judgment; a set whose documents hardly repeat
    (over half distinct after ``_SHARE_TRIAL`` items) stops, and its items stay the same."""
    from ragmeter.gold import goldset

    n = goldset._SHARE_TRIAL + 50
    records = [{"id": f"q{i}", "question": "?", "relevant": [f"d{i}", "a.md"]} for i in range(n)]
    gold = GoldSet.from_records(records)
    late = [item.relevant[1] for item in gold.items[-40:]]
    assert gold.items[0].relevant[1] is gold.items[1].relevant[1]  # shared at first
    assert len({id(rel) for rel in late}) == len(late)  # not after the trial
    assert list(gold.items[-60:]) == [GoldItem.model_validate(r) for r in records[-60:]]
    assert [_outcome_of(i) for i in gold.items[-60:]] == [
        _outcome_of(GoldItem.model_validate(MappingProxyType(r))) for r in records[-60:]
    ]
