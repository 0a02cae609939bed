"""Issue 29.2: a plain dict hit takes a short path in ``coerce_hits``; it must build the very
``Hit`` (or raise the very error) the full path does. The full path is reached with the same
fields in a read-only mapping, which the short path does not take."""

from __future__ import annotations

import dataclasses
import itertools
import math
import pickle
from types import MappingProxyType
from typing import Any

import pytest

from ragmeter.documents import Hit
from ragmeter.errors import RetrieverError
from ragmeter.retrievers.base import coerce_hits
from ragmeter.retrievers.ids import DocIdentity

IDS: list[Any] = ["a#1", "", 7, None, True, "missing"]
DOCS: list[Any] = ["a", "", 3, None, "missing"]
SCORES: list[Any] = [2.5, 0.0, -1.0, 3, math.nan, math.inf, None, True, "1.0", "missing"]
TEXTS: list[Any] = ["some text", "", None, 5, "missing"]
EXTRA: list[dict[str, Any]] = [{}, {"metadata": {"k": 1}}, {"start": 0, "end": 4}, {"doc_id": "b"}]


def _outcome(raw: Any) -> Hit | str:
    try:
        return coerce_hits([raw], source="test")[0]
    except RetrieverError as error:
        return f"error: {error}"


def test_a_plain_dict_gives_what_the_full_path_gives() -> None:
    cases = 0
    for ident, doc, score, text, extra in itertools.product(IDS, DOCS, SCORES, TEXTS, EXTRA):
        fields = {
            name: value
            for name, value in (("id", ident), ("doc", doc), ("score", score), ("text", text))
            if value != "missing"
        } | extra
        short, full = _outcome(dict(fields)), _outcome(MappingProxyType(fields))
        if isinstance(short, Hit) and isinstance(full, Hit):
            # Hit equality would pass NaN != NaN scores only through identity: compare fields.
            assert repr(short) == repr(full), fields
            assert type(short.score) is type(full.score), fields
        else:
            assert short == full, fields
        cases += 1
    assert cases == len(IDS) * len(DOCS) * len(SCORES) * len(TEXTS) * len(EXTRA)


def test_a_plain_dict_under_an_active_identity_is_still_made_relative(tmp_path: Any) -> None:
    identity = DocIdentity(roots=(str(tmp_path),))
    path = str(tmp_path / "x.md")
    hits = coerce_hits(
        [{"id": path, "doc": path, "score": 1.0}, {"id": "c#1", "doc": path}],
        source="test",
        identity=identity,
    )
    assert [(h.id, h.doc) for h in hits] == [("x.md", "x.md"), ("c#1", "x.md")]


@pytest.mark.parametrize("score", [1, math.nan])
def test_scores_the_short_path_leaves_alone_are_still_checked(score: float) -> None:
    outcome = _outcome({"id": "a", "doc": "a", "score": score})
    if isinstance(score, int):
        assert isinstance(outcome, Hit) and outcome.score == 1.0
        assert type(outcome.score) is float
    else:
        assert outcome == 'error: malformed hit 1 from test: "score" must be finite, got nan'


def test_hits_made_without_init_are_the_dataclass_s_own() -> None:
    from ragmeter.retrievers import base

    # In use on this Python (the import-time check falls back to Hit(...) if Hit changes).
    assert base._made_hit is not Hit
    for ident, doc, score, text in itertools.product(["a#1", "b"], ["a"], [2.5, None], ["x", None]):
        made, built = base._made_hit(ident, doc, score, text), Hit(ident, doc, score, text)
        assert (repr(made), made) == (repr(built), built)
    one, two = base._made_hit("a", "a", None, None), base._made_hit("a", "a", None, None)
    assert one.metadata == {} and one.metadata is not two.metadata


def _outcomes(raw: list[Any]) -> list[str]:
    try:
        return [repr(hit) + type(hit.score).__name__ for hit in coerce_hits(raw, source="test")]
    except RetrieverError as error:
        return [f"error: {error}"]


def test_a_list_of_hits_gives_what_the_full_path_gives_hit_by_hit() -> None:
    # Lists mixing plain dict hits with every other shape: the list's short loop stops at the
    # first item it does not take, and the rest (errors numbered by their place in the whole
    # list) go through the full path; a read-only mapping never takes the short loop.
    import random

    rng = random.Random(292)
    fields = [
        {
            name: value
            for name, value in (("id", ident), ("doc", doc), ("score", score), ("text", text))
            if value != "missing"
        }
        | extra
        for ident, doc, score, text, extra in itertools.product(IDS, DOCS, SCORES, TEXTS, EXTRA)
    ]
    plain = [f for f in fields if not isinstance(_outcome(dict(f)), str)]
    others: list[Any] = ["bare.md", ("pair", 2.0), 7, None, Hit("h#1", "h")]
    for _ in range(3000):
        chosen = [
            dict(rng.choice(plain)) if rng.random() < 0.8 else rng.choice(fields)
            for _ in range(rng.randint(0, 6))
        ]
        if rng.random() < 0.2:
            chosen.insert(rng.randint(0, len(chosen)), rng.choice(others))
        full = [MappingProxyType(item) if isinstance(item, dict) else item for item in chosen]
        assert _outcomes([dict(i) if isinstance(i, dict) else i for i in chosen]) == _outcomes(
            full
        ), chosen


def test_the_list_loop_is_in_use_and_its_hits_are_hits() -> None:
    from ragmeter.retrievers import base

    assert base._FAST_HITS
    hits = coerce_hits([{"id": "a#1", "doc": "a", "score": 1.5, "text": "t"}] * 2, source="t")
    assert all(type(hit) is Hit for hit in hits)
    built = Hit("a#1", "a", 1.5, "t")
    assert hits[0] == built and pickle.loads(pickle.dumps(hits[0])) == built  # Ray sends hits
    assert dataclasses.asdict(hits[0]) == dataclasses.asdict(built)
    assert dataclasses.replace(hits[0], id="z") == dataclasses.replace(built, id="z")
    assert hits[0].metadata == {} and hits[0].metadata is not hits[1].metadata
    with pytest.raises(AttributeError):
        hits[0].id = "b"  # type: ignore[misc]  # still frozen


def _general(items: list[Any]) -> list[str]:
    """Each item through the general path (``_coerce_one``), as the fast loop must give."""
    from ragmeter.retrievers.base import _coerce_one

    try:
        hits = [_coerce_one(item, n, "test", None) for n, item in enumerate(items, start=1)]
    except RetrieverError as error:
        return [f"error: {error}"]
    return [repr(hit) + type(hit.score).__name__ for hit in hits]


def test_the_list_loop_matches_coerce_one_on_generated_lists() -> None:
    """Issue 29.2: the list loop (subscripts, ``text`` read only when the dict has room for it)
    gives hit for hit what ``_coerce_one`` gives, and the same located error, on lists of plain
    hits with non-finite and int scores, empty ids, extra keys, None values and non-dict items
    anywhere in them."""
    import random

    rng = random.Random(2922)
    values: dict[str, list[Any]] = {
        "id": ["a#1", "b", "", 7, None, True],
        "doc": ["a", "", 3, None],
        "score": [2.5, 0.0, -1.0, 1e308, 3, True, math.nan, math.inf, -math.inf, None, "1"],
        "text": ["t", "", None, 5],
    }
    extras: list[dict[str, Any]] = [{"metadata": {"k": 1}}, {"start": 0}, {"doc_id": "c"}, {"x": 1}]
    others: list[Any] = ["bare.md", ("pair", 2.0), 7, None, Hit("h#1", "h"), MappingProxyType({})]

    def plain() -> dict[str, Any]:
        return {"id": f"d{rng.randint(0, 9)}", "doc": "d", "score": rng.random()}

    def odd() -> Any:
        if rng.random() < 0.15:
            return rng.choice(others)
        item: dict[str, Any] = {}
        for name, choices in values.items():
            if rng.random() < 0.8:  # else the key is absent
                item[name] = rng.choice(choices)
        if rng.random() < 0.2:
            item |= rng.choice(extras)
        return item

    for _ in range(4000):
        items = [plain() if rng.random() < 0.7 else odd() for _ in range(rng.randint(0, 12))]
        assert _outcomes(items) == _general(items), items


def test_list_loop_hits_are_fresh_and_equal_to_built_ones() -> None:
    """Issue 29.2: every hit of the loop is a ``Hit`` equal to ``Hit(...)`` (same repr), with
    its own ``metadata`` dict; a list answer's output is ``RetrievalOutput(hits=...)``."""
    from ragmeter.retrievers.base import RetrievalOutput, coerce_output

    raw = [
        {"id": "a#1", "doc": "a", "score": 2.0},
        {"id": "b", "doc": "b"},
        {"id": "c", "doc": "c", "text": "x"},
        {"id": "d", "doc": "d", "score": -0.5, "text": "y"},
    ]
    output = coerce_output(raw, source="t")
    built = [
        Hit("a#1", "a", 2.0),
        Hit("b", "b"),
        Hit("c", "c", text="x"),
        Hit("d", "d", -0.5, "y"),
    ]
    assert type(output) is RetrievalOutput and output == RetrievalOutput(hits=built)
    assert repr(output) == repr(RetrievalOutput(hits=built))
    assert [type(hit) for hit in output.hits] == [Hit] * 4
    assert len({id(hit.metadata) for hit in output.hits}) == 4
    with pytest.raises(AttributeError):
        output.answer = "x"  # type: ignore[misc]  # still frozen


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            [{"id": "a", "doc": "a"}, {"score": 1.0}],
            'malformed hit 2 from t: missing "id" and "doc"',
        ),
        (
            [{"id": "a", "doc": "a"}, {"id": "", "doc": "b"}],
            'malformed hit 2 from t: "id" is empty',
        ),
        (
            [{"id": "a", "doc": "a", "score": 1.0}, {"id": "b", "doc": "b", "score": math.inf}],
            'malformed hit 2 from t: "score" must be finite, got inf',
        ),
        (
            [{"id": "a", "doc": "a"}, 5, {"id": "b", "doc": "b"}],
            'malformed hit 2 from t: expected a dict, an object with "id"/"doc" or a string, '
            "got int 5",
        ),
        (
            [{"id": "a", "doc": "a"}, {"id": "b", "doc": "b", "text": 3}],
            'malformed hit 2 from t: "text" must be a string, got int 3',
        ),
    ],
    ids=["missing-id", "empty-id", "inf-score", "int-item", "int-text"],
)
def test_list_loop_errors_name_the_hit(raw: list[Any], message: str) -> None:
    """Issue 29.2: a malformed hit after plain ones still raises its located error."""
    with pytest.raises(RetrieverError) as caught:
        coerce_hits(raw, source="t")
    assert str(caught.value) == message
