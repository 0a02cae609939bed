"""Issue 2: property tests for the gold set parsers (hypothesis)."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.errors import GoldSetError
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any Unicode but lone surrogates, which no UTF-8 file can hold, and control characters
# other than tab and newline, which ids, questions and tags refuse (issue 19.10).
text = st.text(
    st.characters(exclude_categories=("Cs", "Cc"), include_characters="\t\n"), max_size=30
)
filled = text.filter(lambda s: s.strip() != "")
json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | text
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
grade = st.integers(0, 3)
relevance = st.one_of(
    st.builds(lambda d, g: {"doc": d, "grade": g}, filled, grade),
    st.builds(lambda d, q, g: {"doc": d, "quote": q, "grade": g}, filled, filled, grade),
    st.builds(lambda c, g: {"chunk": c, "grade": g}, filled, grade),
)
item = st.fixed_dictionaries(
    {"question": filled},
    optional={
        "relevant": st.lists(relevance, max_size=4),
        "answer_contains": st.lists(filled, max_size=3),
        "tags": st.lists(filled, max_size=3),
        "source": st.sampled_from(["log", "docs", "adversarial", "synthetic"]),
        "status": filled,
        "parent": filled,
        "metadata": st.dictionaries(text, json_value, max_size=3),
    },
)
gold_records = st.lists(st.tuples(filled, item), max_size=8, unique_by=lambda pair: pair[0]).map(
    lambda pairs: [{"id": item_id, **fields} for item_id, fields in pairs]
)


@SETTINGS
@given(gold_records)
def test_any_valid_gold_set_round_trips_with_equal_hash(records: list[dict[str, Any]]) -> None:
    """Issue 2: YAML and JSONL saves load back to the same items and hash."""
    gold = GoldSet.from_records(records)
    with tempfile.TemporaryDirectory() as folder:
        for name in ("g.yaml", "g.jsonl"):
            path = Path(folder) / name
            gold.save(path)
            if not records:
                continue  # an empty file is refused on load, by design
            again = load_gold(path)
            assert again == gold
            assert again.hash == gold.hash


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from([".yaml", ".json", ".jsonl"]))
def test_garbage_bytes_only_raise_gold_set_error(data: bytes, suffix: str) -> None:
    """Issue 2: arbitrary bytes either load or raise GoldSetError, nothing else."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"g{suffix}"
        path.write_bytes(data)
        with contextlib.suppress(GoldSetError):
            load_gold(path)


@SETTINGS
@given(gold_records.filter(bool), st.data(), st.sampled_from([".yaml", ".jsonl"]))
def test_truncated_or_edited_files_only_raise_gold_set_error(
    records: list[dict[str, Any]], data: st.DataObject, suffix: str
) -> None:
    """Issue 2: a valid file cut short or with a character replaced fails cleanly."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"g{suffix}"
        GoldSet.from_records(records).save(path)
        content = path.read_text(encoding="utf-8")
        cut = data.draw(st.integers(0, len(content)))
        junk = data.draw(st.sampled_from(["", ":", "-", "{", "'", '"', "\t", "\n", "#", "*"]))
        path.write_text(content[:cut] + junk + content[cut + 1 :], encoding="utf-8")
        with contextlib.suppress(GoldSetError):
            load_gold(path)
