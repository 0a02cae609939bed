"""Issue 29.2: the writer's cheaper rows are the rows it wrote before.

A ranking of plain hits (string ids, a float score or none, no span) takes a short path to
JSON; every other hit takes the general one. Both must write the same text for the same
hits, so a stored ranking never depends on which path made it. And the INSERT of a run's
results is compiled once, not once per batch.
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter._redact import redact
from ragmeter.documents import Hit
from ragmeter.run import QuestionResult
from ragmeter.store import Store, _codec, _results

IDS: list[Any] = ["d1", 'a"b', "x\\y", "é#3", "tab\there", "\u2028", np.str_("np"), "", "d1#0"]
SCORES: list[Any] = [None, 1.0, -3.25, 1e16, 1e-7, 0.1 + 0.2, math.nan, math.inf, 3, True,
                     np.float32(0.1), np.float64(2.5), np.int64(4)]  # fmt: skip
SPANS: list[Any] = [None, 0, 7, np.int64(9)]


def general_entry(hit: Hit) -> dict[str, Any]:
    """What the store keeps of a hit, built field by field (the general path's rule)."""
    entry: dict[str, Any] = {"id": hit.id, "doc": hit.doc}
    if hit.score is not None:
        entry["score"] = float(hit.score)
    if hit.start is not None:
        entry["start"] = int(hit.start)
    if hit.end is not None:
        entry["end"] = int(hit.end)
    return entry


def test_every_ranking_is_written_as_the_general_path_writes_it() -> None:
    hits = [
        Hit(id=i, doc=d, score=s, start=a, end=b)
        for i, d, s, (a, b) in itertools.product(IDS, IDS[:3], SCORES, [(None, None), (0, 7)])
    ]
    hits += [Hit(id="d", doc="d", score=1.5, start=a, end=b) for a in SPANS for b in SPANS]
    windows = [hits[at : at + size] for size in (1, 2, 3) for at in range(0, len(hits) - size, 3)]
    plain = [Hit(id=i, doc=d, score=s) for i in IDS for d in IDS for s in (None, 2.0, 1e-7)]
    windows += [plain[at : at + 10] for at in range(0, len(plain), 5)]  # the short path
    checked = 0
    for ranking in windows:
        text = _codec._ranking(ranking)
        assert text == _codec.dumps([general_entry(hit) for hit in ranking])
        # and the text reads back as the hits' fields (NaN and infinity become null)
        for entry, hit in zip(json.loads(text), ranking, strict=True):
            assert entry["id"] == str(hit.id) and entry["doc"] == str(hit.doc)
            if hit.score is None:
                assert "score" not in entry
            elif math.isfinite(float(hit.score)):
                assert entry["score"] == float(hit.score)
        checked += 1
    assert checked > 700


def test_the_results_insert_is_compiled_once(tmp_path: Path) -> None:
    """Many batches into two stores: one compiled INSERT of ``results`` each, and the rows
    read back with plain ``sqlite3`` are the rows :func:`_codec.result_row` made."""
    _results._insert_statement.cache_clear()
    made: list[tuple[Any, ...]] = []
    for name in ("a.db", "b.db"):
        with Store.open(tmp_path / name) as store:
            gold = type("Gold", (), {"hash": "h", "name": "g", "to_records": lambda self: []})()
            run = store.create_run(name=None, gold_hash=store.save_gold(gold), retriever="r",
                                   config={}, k=2, level="doc", commit=None)  # fmt: skip
            for batch in range(5):
                results = [
                    QuestionResult(
                        f"q{batch}-{i}",
                        hits=(Hit(id=f"d{i}", doc=f"d{i}", score=i),),
                        latency_ms=1.5,
                        error=None if i else "timeout",
                    )  # fmt: skip
                    for i in range(3)
                ]
                store.add_results(run.id, results, replace=False)
                if name == "a.db":
                    made += [_codec.result_row(run.id, r) for r in results]
    # one per store's dialect, none per batch (the run row and gold are written otherwise)
    assert _results._insert_statement.cache_info().misses == 2
    keys = ", ".join(_codec.RESULT_KEYS)
    stored = sqlite3.connect(tmp_path / "a.db").execute(f"SELECT {keys} FROM results ORDER BY id")
    assert [tuple(row) for row in stored] == made


def test_summaries_given_in_order_are_stored_beside_their_results() -> None:
    """Issue 29.2: the writer hands a batch's summaries over as a list, in the results'
    order; a list of the wrong length is an error, not a shifted summary."""
    with Store.memory() as store:
        gold = type("Gold", (), {"hash": "h", "name": "g", "to_records": lambda self: []})()
        run = store.create_run(name=None, gold_hash=store.save_gold(gold), retriever="r",
                               config={}, k=2, level="doc", commit=None)  # fmt: skip
        results = [QuestionResult("q1"), QuestionResult("q2")]
        store.add_results(run.id, results, [{"first": 1}, {"first": None}], replace=False)
        assert dict(store.summaries_for(run.id, ["q1", "q2"])) == {
            "q1": (None, {"first": 1}),
            "q2": (None, {"first": None}),
        }
        with pytest.raises(ValueError, match="zip"):
            store.add_results(run.id, [QuestionResult("q3")], [{}, {}])


def test_rows_made_ahead_are_stored_as_add_results_stores_their_results() -> None:
    """Issue 29.2: ``evaluate()`` makes each result's row as it is delivered
    (``Store.result_row``) and the writer stores the rows (``add_result_rows``): the stored
    rows equal those ``add_results`` writes of the same results, a repeated item id keeps
    its last row, and a row made for another run is refused before anything is written."""
    gold = type("Gold", (), {"hash": "h", "name": "g", "to_records": lambda self: []})()
    results = [
        QuestionResult("q1", hits=(Hit("a", "a", 2.0), Hit("b#1", "b", None, start=0, end=4)),
                       latency_ms=1.5, extra={"grades": [1, 0], "texts": [None, "x"]}),
        QuestionResult("q2", error="boom at http://u:secret@h/x"),
        QuestionResult("q3", hits=(Hit("c", "c", 0.5),), answer="yes", extra={"context": "c"}),
    ]  # fmt: skip
    summaries = [{"first": 1, "top": 2, "gold": 1}, {"first": None}, {"first": None, "ctx": 0}]
    stored = []
    with Store.memory() as store:
        for how in ("results", "rows"):
            run = store.create_run(name=how, gold_hash=store.save_gold(gold), retriever="r",
                                   config={}, k=2, level="doc", commit=None)  # fmt: skip
            if how == "results":
                store.add_results(run.id, results, summaries)
            else:
                pairs = zip(results, summaries, strict=True)
                rows = [store.result_row(run.id, r, s) for r, s in pairs]
                early = store.result_row(run.id, QuestionResult("q1", error="early"))
                store.add_result_rows(run.id, [early, *rows], replace=False)  # q1: the last
                with pytest.raises(ValueError, match="a row of run"):
                    store.add_result_rows(run.id + 1, rows[:1])
            stored.append(
                (list(store.results(run.id)), dict(store.summaries_for(run.id, ["q1", "q2", "q3"])))
            )
    assert stored[0] == stored[1]
    assert [r.item_id for r in stored[1][0]] == ["q1", "q2", "q3"]
    assert "secret" not in repr(stored[1])


# Keys and values of a result's extra and summary, with what orjson refuses without the
# general path's options (keys that are not strings, an integer past 64 bits, numpy values).
MAP_KEYS: list[Any] = ["grades", "texts", "first", "api_key", "body", np.str_("np"), 3, None, True]
MAP_VALUES: list[Any] = [
    1, 0, -2.5, math.nan, math.inf, None, False, 2**70, np.int64(4), np.float32(0.5),
    [1, 0, 0], [None] * 3, [None, 1], [], (2, None), [1.5, True], [2**70], ["x"], [[1]],
    "plain", "http://u:pw@h/x", {"a": [None]},
]  # fmt: skip


def test_extra_and_summary_are_written_as_dumps_writes_their_redacted_copy() -> None:
    checked = 0
    for pairs in itertools.chain(
        itertools.product(itertools.product(MAP_KEYS, MAP_VALUES), repeat=1),
        itertools.product(itertools.product(MAP_KEYS[:5], MAP_VALUES[:14]), repeat=2),
    ):
        mapping = dict(pairs)
        try:
            expected: str | type[Exception] = _codec.dumps(redact(dict(mapping)))
        except TypeError as error:
            expected = type(error)
        if isinstance(expected, str):
            assert _codec._mapping_json(mapping) == expected, mapping
        else:
            with pytest.raises(expected):
                _codec._mapping_json(mapping)
        checked += 1
    assert checked > 3000


def test_a_ranking_of_float_scores_with_odd_ids_is_written_as_the_general_path_writes_it() -> None:
    """The short path hands any id to orjson without its options; an id that needs them
    (numpy, a dict with an integer key) or ``default`` (a path) takes the general path,
    so the text is the same either way (issue 29.2)."""
    odd: list[Any] = [7, 2.5, None, True, np.int64(3), np.str_("n"), Path("a/b.md"), {1: "x"},
                      {"k": [1, None]}, ("t", 1), "plain"]  # fmt: skip
    for hid, doc in itertools.product(odd, ["d", *odd[:4]]):
        ranking = [Hit(id="first", doc="first", score=2.0), Hit(id=hid, doc=doc, score=1.0)]
        assert _codec._ranking(ranking) == _codec.dumps([general_entry(h) for h in ranking])
    with pytest.raises(TypeError):  # orjson's error for an integer past 64 bits, as before
        _codec._ranking([Hit(id=2**70, doc="d", score=1.0)])  # type: ignore[arg-type]
