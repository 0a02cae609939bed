"""Issue 29.1: a stored gold snapshot is read back without pydantic, with the same fields."""

from __future__ import annotations

import pytest

from ragmeter.errors import GoldSetError
from ragmeter.evaluation.report import gold_fields
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.stored import StoredItem, stored_items

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
