"""Issue 29.1: a stored gold snapshot is read back without pydantic, with the same fields
(``stored_items`` from its records, ``StoredGold`` from its text a record at a time)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragmeter.errors import GoldSetError, StoreError
from ragmeter.evaluation.report import gold_fields
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.stored import StoredGold, StoredItem, expected_of, stored_items
from ragmeter.store import _codec

RECORDS = [
    {"id": "q1", "question": "Refunds?", "relevant": [{"doc": "faq.md", "quote": "30 days",
     "grade": 2}, {"chunk": "a/b.md#3"}], "tags": ["policy"], "answer_contains": ["30"]},
    {"id": 12, "query": "Old spelling?", "relevantDocs": ["x.md"]},  # not canonical
    {"id": "q3", "question": "Nothing relevant", "relevant": [{"doc": "y.md", "grade": 0}]},
]  # fmt: skip


def test_stored_items_say_what_the_validated_items_say() -> None:
    gold = GoldSet.from_records(RECORDS)
    items = stored_items(gold.to_records())  # what a run stores
    assert all(isinstance(item, StoredItem) for item in items)
    for item, reference in zip(items, gold, strict=True):
        assert (item.id, item.question) == (reference.id, reference.question)
        assert item.tags == reference.tags and item.answer_contains == reference.answer_contains
        assert gold_fields(item) == gold_fields(reference)
    assert items[0].relevant[1].doc_id == "a/b.md"


def test_a_record_not_in_canonical_form_is_validated() -> None:
    items = stored_items(RECORDS)
    assert not isinstance(items[1], StoredItem)  # went through pydantic
    assert items[1].id == "12" and items[1].relevant[0].doc == "x.md"
    with pytest.raises(GoldSetError, match="grade"):
        stored_items([{"id": "q", "question": "?", "relevant": [{"doc": "a", "grade": 7}]}])
    with pytest.raises(GoldSetError, match='duplicate item id "q1"'):
        stored_items([RECORDS[0], RECORDS[0]])


def _texts(records: list[dict[str, Any]]) -> dict[str, str]:
    """The stored JSON text as this store writes it, and as other writers might."""
    return {
        "compact": _codec.dumps(records),
        "spaced": json.dumps(records),
        "indented": json.dumps(records, indent=2),
    }


@pytest.mark.parametrize("spacing", ["compact", "spaced", "indented"])
def test_stored_gold_reads_what_the_validated_items_say(spacing: str) -> None:
    """Issue 29.1: ``StoredGold`` reads a record at a time and keeps what a report counts;
    its columns and the items it decodes again say what pydantic's items say."""
    gold = GoldSet.from_records(RECORDS)
    records = gold.to_records()
    stored = StoredGold(_texts(records)[spacing], name="faq")
    assert len(stored) == len(gold) == 3
    assert stored.ids == [item.id for item in gold]
    assert stored.tags == [item.tags for item in gold]
    assert stored.answer_contains == [item.answer_contains for item in gold]
    # Independent reference: the documents of the judgments graded above 0, in order.
    assert stored.expected == [("faq.md", "a/b.md"), ("x.md",), ()]
    for position, reference in enumerate(gold):
        item = stored[position]
        assert isinstance(item, StoredItem)
        assert (item.id, item.question, item.tags) == (
            reference.id,
            reference.question,
            reference.tags,
        )
        assert gold_fields(item) == gold_fields(reference)
        assert expected_of(item) == expected_of(reference) == stored.expected[position]
    assert stored[-1] is stored[2] and stored[1:] == [stored[1], stored[2]]
    assert stored.records() == records
    assert stored.questions() == {item.id: item.question for item in gold}


def test_stored_gold_validates_what_is_not_canonical() -> None:
    stored = StoredGold(json.dumps(RECORDS))
    assert not isinstance(stored[1], StoredItem)  # went through pydantic, at once
    assert stored.ids[1] == "12" and stored.expected[1] == ("x.md",)
    assert stored.questions()["12"] == "Old spelling?"
    with pytest.raises(GoldSetError, match="grade"):
        StoredGold('[{"id": "q", "question": "?", "relevant": [{"doc": "a", "grade": 7}]}]')
    with pytest.raises(GoldSetError, match='faq: duplicate item id "q1"'):
        StoredGold(json.dumps([RECORDS[0], RECORDS[2], RECORDS[0]]), name="faq")


@pytest.mark.parametrize("text", ["[]", " [ ]\n", "[\n]"])
def test_an_empty_stored_gold_set(text: str) -> None:
    assert len(StoredGold(text)) == 0 and StoredGold(text).ids == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[{"id": "q1", "question": "?"}', json.JSONDecodeError),
        ('[{"id": "q1", "question": "?"} {"id": "q2"}]', json.JSONDecodeError),
        ('[{"id": "q1", "question": "?"}] x', json.JSONDecodeError),
        ('{"id": "q1"}', StoreError),
        ('"q1"', StoreError),
    ],
    ids=["cut", "no-comma", "trailing", "object", "string"],
)
def test_a_broken_stored_text_is_an_error(text: str, error: type[Exception]) -> None:
    """Never a shorter gold set: a stored text that is not a JSON list of records fails."""
    with pytest.raises(error):
        StoredGold(text)
