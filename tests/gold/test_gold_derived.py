"""What evaluate() derives from a gold set once (issue 29.2), against plain references.

The doc-level qrels, each item's highest grade, the items with nothing to find, the
items with something to find and the canonical records are worked out in fewer passes
now; on generated gold sets (one or several judgments, repeated documents, quotes and
chunks, grades 0-3, items without judgments, optional fields) each must equal what a
plain reference written here gives, records field for field and in the same key order.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ragmeter.evaluation.unknowns import nothing_to_find, positive_items
from ragmeter.gold.goldset import GoldSet


def _records(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    for i in range(rng.randint(1, 40)):
        relevant: list[dict[str, Any]] = []
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            doc = f"d{rng.randint(0, 6)}"
            kind = rng.choice(["doc", "doc", "quote", "chunk"])
            entry: dict[str, Any] = {"grade": rng.randint(0, 3)}
            if kind == "chunk":
                entry["chunk"] = f"{doc}#{rng.randint(0, 3)}"
            else:
                entry["doc"] = doc
            if kind == "quote":
                entry["quote"] = f"words {rng.randint(0, 9)}"
            relevant.append(entry)
        record: dict[str, Any] = {"id": f"q{i}", "question": f"question {i}?"}
        if relevant:
            record["relevant"] = relevant
        if rng.random() < 0.3:
            record["tags"] = ["a", "b"][: rng.randint(1, 2)]
        if rng.random() < 0.2:
            record["answer_contains"] = ["words"]
        if rng.random() < 0.2:
            record["source"] = "docs"
        records.append(record)
    return records


def _doc_of(entry: dict[str, Any]) -> str:
    return entry["doc"] if "doc" in entry else entry["chunk"].rpartition("#")[0]


def test_derived_sets_equal_the_plain_references() -> None:
    for seed in range(120):
        records = _records(seed)
        gold = GoldSet.from_records(records)
        qrels: dict[str, dict[str, int]] = {}
        for record in records:
            if record.get("relevant"):
                docs = qrels.setdefault(record["id"], {})
                for entry in record["relevant"]:
                    docs[_doc_of(entry)] = max(entry["grade"], docs.get(_doc_of(entry), 0))
        grades = {r["id"]: [e["grade"] for e in r.get("relevant", [])] for r in records}
        assert gold.qrels() == qrels and list(gold.qrels()) == list(qrels)
        assert gold.top_grades() == {i: max(g) for i, g in grades.items() if g}
        nothing = [i for i, g in grades.items() if g and max(g) == 0]
        assert gold.nothing_to_find() == nothing == gold.summary()["items_with_nothing_to_find"]
        assert positive_items(gold) == {i for i, g in grades.items() if g and max(g) > 0}
        labels = {"q0": {"x": 2}, "q1": {"y": 0}, "elsewhere": {"z": 1}}
        with_labels = {i for i, g in grades.items() if g and max(g) > 0} | {"q0"}
        assert positive_items(gold, labels) == with_labels
        said = nothing_to_find(gold)
        assert bool(said) == bool(nothing) and all(i in said[0] for i in nothing[:10])


def test_records_keep_their_fields_and_order() -> None:
    order = ("doc", "quote", "chunk", "grade")
    for seed in range(120):
        records = _records(seed)
        for record, made in zip(records, GoldSet.from_records(records).to_records(), strict=True):
            expected = dict(record)
            if "relevant" in record:
                expected["relevant"] = [
                    {key: entry[key] for key in order if key in entry}
                    for entry in record["relevant"]
                ]
            assert (
                json.dumps(made) == json.dumps({k: expected[k] for k in made})
                and made.keys() == expected.keys()
            )
            for entry in made.get("relevant", []):
                assert list(entry) == [key for key in order if key in entry]
