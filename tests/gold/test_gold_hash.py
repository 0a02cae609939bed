"""Issue 29.2: the gold set's hash identifies a gold set across runs and versions, so the
faster writer of its canonical JSON (orjson, when installed) must give the bytes of the plain
``json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"))`` it always
hashed, for every string, grade and field a record can hold."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from ragmeter.errors import GoldSetError
from ragmeter.gold.goldset import GoldSet, _canonical_json, _records_hash

# Every code point but the surrogates, in pieces, and the characters JSON escapes.
EVERY = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
SPECIAL = ['"', "\\", "/", "\x00", "\x07", "\x1f", "\x7f", "\u2028", "é", "😀", "\ufeff", "a b"]


def _reference(records: list[dict[str, Any]]) -> str:
    text = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _text(rng: random.Random) -> str:
    if rng.random() < 0.3:
        start = rng.randrange(len(EVERY) - 200)
        return EVERY[start : start + rng.randrange(1, 200)]
    return "".join(rng.choice(SPECIAL) for _ in range(rng.randrange(1, 8)))


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    record: dict[str, Any] = {"question": _text(rng), "id": f"q{i}{_text(rng)}"}
    relevant = []
    for _ in range(rng.randrange(4)):
        entry: dict[str, Any] = {"grade": rng.randrange(4), "doc": _text(rng)}
        if rng.random() < 0.5:
            entry["quote"] = _text(rng)
        if rng.random() < 0.2:
            entry["chunk"] = _text(rng)
        relevant.append(entry)
    if relevant:
        record["relevant"] = relevant
    for key in ("tags", "answer_contains"):
        if rng.random() < 0.3:
            record[key] = [_text(rng) for _ in range(rng.randrange(1, 3))]
    for key in ("reference_answer", "source", "status", "parent"):
        if rng.random() < 0.2:
            record[key] = _text(rng)
    return record


def test_the_canonical_json_is_json_dumps_byte_for_byte() -> None:
    rng = random.Random(29)
    records = [_record(rng, i) for i in range(3000)]
    assert _records_hash(records) == _reference(records)
    assert _canonical_json(records) == json.dumps(
        records, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    ).encode("utf-8")
    whole = [{"id": "all", "question": EVERY, "relevant": [{"doc": EVERY, "grade": 3}]}]
    assert _records_hash(whole) == _reference(whole)


def test_what_orjson_would_spell_otherwise_is_hashed_as_json_spells_it() -> None:
    rng = random.Random(7)
    plain = [_record(rng, i) for i in range(50)]
    others: list[list[dict[str, Any]]] = [
        [*plain, {"id": "s", "question": "lone \ud800 surrogate"}],
        [*plain, {"id": "m", "question": "?", "metadata": {"f": 1e16, "g": 0.1, "n": None}}],
        [*plain, {"id": "m", "question": "?", "metadata": {"big": 2**70, "z": 1, "a": [1.5]}}],
        [{"id": "g", "question": "?", "relevant": [{"doc": "d", "grade": 2**64}]}],
    ]
    for records in others:
        assert _records_hash(records) == _reference(records)


def test_a_gold_set_hashes_as_ever() -> None:
    rng = random.Random(3)
    records = []
    for i in range(500):
        entries = [{"doc": f"d{rng.randrange(9)}é", "grade": rng.randrange(4)}]
        if i % 3 == 0:
            entries.append({"doc": 'a"b\\', "quote": "thirty\tdays \u2028", "grade": 0})
        records.append({"id": f"q{i}", "question": f'"q{i}" é 😀 \\ ?', "relevant": entries})
    gold = GoldSet.from_records(records, name="h")
    expected = _reference(gold.to_records())
    assert gold.hash == expected
    again = GoldSet.from_records(records, name="h")
    assert again.hashed_records() == gold.to_records()
    assert again.hash == expected


def _reference_record(item: Any) -> dict[str, Any]:
    """A record as the docs spell it, from the item's attributes: canonical names in field
    order, defaults left out, a judgment's grade always kept."""
    record: dict[str, Any] = {"id": item.id, "question": item.question}
    if item.relevant:
        record["relevant"] = [
            {k: getattr(r, k) for k in ("doc", "quote", "chunk") if getattr(r, k) is not None}
            | {"grade": r.grade}
            for r in item.relevant
        ]
    for name in ("answer_contains", "reference_answer", "tags", "source", "status", "parent"):
        value = getattr(item, name)
        if value not in ((), None):
            record[name] = list(value) if isinstance(value, tuple) else value
    if item.metadata:
        record["metadata"] = item.metadata
    return record


def test_records_hash_and_stored_content_are_as_ever() -> None:
    """Issue 29.2: ``to_records`` reads the items' values directly, with the collector paused,
    and plain items share judgments: the records (key order too), the hash and the bytes the
    store keeps are still those of the items' attributes."""
    from ragmeter.store import Store

    rng = random.Random(5)
    records = [r for r in (_record(rng, i) for i in range(3000)) if _valid(r)]
    assert len(records) > 100
    records += [
        {"id": f"p{i}", "question": f"question {i}", "relevant": [f"d{i % 7}", {"doc": "x"}]}
        for i in range(300)
    ]
    records += [{"id": "m", "question": "?", "metadata": {"k": [1, "é"]}, "tags": "t"}]
    every = {"source": "docs", "status": "ok", "parent": "p", "reference_answer": "r"}
    chunked = [{"chunk": "c#1", "grade": 2}, {"doc": "d", "quote": "q", "grade": 0}, "d"]
    records += [{"id": "s", "question": "?", "relevant": chunked, "answer_contains": ["a"]} | every]
    gold = GoldSet.from_records(records, name="h")
    expected = [_reference_record(item) for item in gold]
    text = json.dumps(expected, ensure_ascii=False, separators=(",", ":"))
    assert json.dumps(gold.to_records(), ensure_ascii=False) == json.dumps(
        expected, ensure_ascii=False
    )
    assert gold.hash == _reference(expected)
    again = GoldSet.from_records(records, name="h")
    with Store.memory() as store:
        assert store.save_gold(again, again.hashed_records()) == _reference(expected)
        assert store.load_gold_text(again.hash) == text


def _valid(record: dict[str, Any]) -> bool:
    try:
        GoldSet.from_records([record])
    except GoldSetError:
        return False
    return True
