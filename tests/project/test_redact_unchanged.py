"""Issue 29.2: a result row whose extra and summary ``redact`` cannot change is written
without the copy; ``unchanged_by_redact`` must never say so of a mapping ``redact`` changes."""

from __future__ import annotations

import itertools
import math
from typing import Any

from ragmeter._redact import forget_secrets, redact, remember_secret, unchanged_by_redact
from ragmeter.documents import Hit
from ragmeter.run import QuestionResult
from ragmeter.store._codec import RESULT_KEYS, dumps, result_row

KEYS: list[Any] = ["grades", "texts", "api_key", "token_ids", "body", "password", 3, None]
VALUES: list[Any] = [
    1, 2.5, math.nan, None, True, 0, "plain", "http://u:pw@h/x", "sk-planted-9917",
    [1, 0], [None, None], [], (2, 3), ["x"], [[1]], {"a": 1}, {"api_key": "k"}, b"x",
]  # fmt: skip


def test_a_mapping_said_unchanged_is_what_redact_gives() -> None:
    remember_secret("sk-planted-9917")
    try:
        said = _said_unchanged()
    finally:
        forget_secrets()
    assert said > 100


def _said_unchanged() -> int:
    said = 0
    for pairs in itertools.chain(
        itertools.product(itertools.product(KEYS, VALUES), repeat=1),
        itertools.product(itertools.product(KEYS[:4], VALUES), repeat=2),
    ):
        mapping = dict(pairs)
        if unchanged_by_redact(mapping):
            said += 1
            assert repr(redact(mapping)) == repr(mapping), mapping
    return said


def test_a_result_row_is_the_redacted_row() -> None:
    hits = (Hit(id="a#1", doc="a", score=1.5),)
    summaries: list[dict[str, Any]] = [
        {"first": 1, "top": 3},
        {"first": None, "gen": "http://u:pw@h"},
    ]
    extras: list[dict[str, Any]] = [{"grades": [1], "texts": [None]}, {"token_ids": [1]}]
    extras.append({"context": [{"text": "http://u:pw@h"}]})
    for extra, summary in itertools.product(extras, summaries):
        values = result_row(1, QuestionResult("q", hits, extra=extra), summary)
        row = dict(zip(RESULT_KEYS, values, strict=True))
        assert row["extra"] == dumps(redact(dict(extra)))
        assert row["summary"] == dumps(redact(dict(summary)))
        assert "pw" not in row["extra"] + row["summary"]
