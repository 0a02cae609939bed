"""Issue 29.2: ``evaluate()`` takes each outcome through its hits in one way when it can
(``QuestionPath.plain``); everything it gives and keeps must be what the step by step way
(``QuestionPath.general``: question_result, IdCheck.observe, row_summary, Tally.add) gives and
keeps, for any run. Two paths, one forced the general way, are fed the same generated
outcomes and compared result by result (value, repr, stored summary and key order) and at
the end (tally, scoring inputs, id check, scores)."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError
from ragmeter.evaluation.answering import Answered
from ragmeter.evaluation.finish import Tally
from ragmeter.evaluation.hit_text import HIT_TEXT_MAX_CHARS
from ragmeter.evaluation.per_question import QuestionPath
from ragmeter.evaluation.scoring import Judgments, score_inputs
from ragmeter.executors.local import Outcome
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers import RetrievalOutput
from ragmeter.retrievers.ids import IdCheck

DOCS = ["a.md", "b.md", "c.md", "d.md", "x/e.md", "./a.md", "A.MD", "7f3e", "y/x/e.md"]
LONG = "w" * (HIT_TEXT_MAX_CHARS + 1)

_hit = st.builds(
    lambda doc, own, chunk, score, text: Hit(
        f"{doc}#{chunk}" if own else doc, doc, score=score, text=text
    ),
    st.sampled_from(DOCS),
    st.booleans(),
    st.integers(0, 2),
    st.one_of(st.none(), st.floats(-5, 5)),
    st.sampled_from([None, None, None, None, None, "", "some text", LONG]),
)

_value = st.one_of(
    st.builds(
        RetrievalOutput,
        st.lists(_hit, max_size=7),
        st.sampled_from([None, None, None, "", "an answer"]),
        st.sampled_from([None, None, {}, {"retrieve": 1.0}]),
    ),
    st.builds(
        lambda hits: Answered(hits, "answer", 1.0, [{"id": h.id} for h in hits[:1]], 2.0),
        st.lists(_hit, max_size=4),
    ),
)

# Shaped as the plain way takes them: distinct ids, no answer, no stages.
_plain_value = st.builds(
    RetrievalOutput, st.lists(_hit, min_size=1, max_size=7, unique_by=lambda hit: hit.id)
)

_outcome = st.tuples(
    st.integers(0, 5),  # which question
    st.one_of(_plain_value, _plain_value, _plain_value, _value, st.none()),  # None: an error
    st.one_of(st.none(), st.floats(0, 100)),
)

_gold = st.lists(
    st.tuples(
        st.lists(
            st.tuples(st.sampled_from(DOCS[:5] + ["f.md", "g.md"]), st.integers(0, 3)),
            max_size=4,
        ),
        st.sampled_from([False, False, False, True]),  # answer_contains
    ),
    min_size=6,
    max_size=6,
)


def _gold_set(spec: list[tuple[list[tuple[str, int]], bool]]) -> GoldSet:
    records: list[dict[str, Any]] = []
    for n, (relevant, answer) in enumerate(spec):
        record: dict[str, Any] = {
            "id": f"q{n}",
            "question": f"question {n}?",
            "relevant": [{"doc": doc, "grade": grade} for doc, grade in relevant],
        }
        if answer:
            record["answer_contains"] = ["answer"]
        records.append(record)
    return GoldSet.from_records(records)


def _state(check: IdCheck, tally: Tally | None) -> dict[str, Any]:
    try:
        finished: Any = check.finish(), check.notes
    except ConfigError as error:
        finished = str(error)
    out: dict[str, Any] = {
        "check": (
            check._retrieved,
            check._strange,
            bool(check._gold_found),
            check._as_is,
            check._questions,
            check._failure,
            check._field_fix,
        ),
        "finished": finished,
    }
    if tally is not None:
        inputs = tally.inputs
        out["tally"] = (
            tally.brief,
            tally.any_hits,
            tally.any_judgeable,
            tally.by_document,
            tally.unplaced,
            tally.any_answer,
            tally.unknown_answers,
            tally.empty_answers,
            tally.settle(),
        )
        out["inputs"] = (
            inputs.rankings,
            inputs.qrels,
            inputs.latencies,
            inputs.answers,
            {i: r.extra for i, r in inputs.answer_results.items()},
            inputs.positive,
            inputs.no_answer,
        )
    return out


@settings(max_examples=300, deadline=None)
@given(
    _gold,
    st.lists(_outcome, max_size=14),
    st.integers(1, 5),
    st.sampled_from([None, ["a.md", "b.md", "c.md", "d.md", "x/e.md", "f.md"]]),
    st.booleans(),
)
def test_the_plain_way_gives_and_keeps_what_the_general_way_does(
    spec: list[tuple[list[tuple[str, int]], bool]],
    outcomes: list[tuple[int, Any, float | None]],
    k: int,
    corpus: list[str] | None,
    tallied: bool,
) -> None:
    _compare(spec, outcomes, k, corpus, tallied)


def test_the_plain_way_on_long_runs_s() -> None:
    """Longer runs than hypothesis makes, most questions plain (ids seen before, a gold
    document found, the early id check passed)."""
    rng = random.Random(292)
    plain = 0
    for _ in range(100):
        spec = [
            (
                [(rng.choice(DOCS[:5]), rng.randint(0, 3)) for _ in range(rng.randint(0, 3))],
                rng.random() < 0.1,
            )
            for _ in range(6)
        ]
        outcomes = []
        for _ in range(rng.randint(1, 40)):
            docs = rng.sample(DOCS, rng.randint(1, 6))
            hits = [
                Hit(f"{doc}#{rng.randint(0, 1)}" if rng.random() < 0.3 else doc, doc,
                    score=rng.choice([None, 1.5]), text=rng.choice([None, None, "t", LONG]))
                for doc in docs + rng.sample(docs, min(len(docs), rng.randint(0, 2)))
            ]  # fmt: skip
            value = RetrievalOutput(hits, answer=rng.choice([None] * 9 + ["yes"]))
            outcomes.append((rng.randint(0, 5), value, rng.choice([None, 2.5])))
        plain += _compare(spec, outcomes, rng.randint(1, 8), rng.choice([None, DOCS[:5]]), True)
    assert plain > 300  # the plain way was taken


def _compare(
    spec: list[tuple[list[tuple[str, int]], bool]],
    outcomes: list[tuple[int, Any, float | None]],
    k: int,
    corpus: list[str] | None,
    tallied: bool,
) -> int:
    """Feed ``outcomes`` to a path that may go the plain way and to one that may not;
    compare what they give and keep. How many outcomes went the plain way."""
    gold = _gold_set(spec)
    items = list(gold)
    judgments = Judgments.build(gold, "doc")
    paths = []
    for plain in (True, False):
        check = IdCheck.for_run(gold, corpus, None)
        tally = Tally.start(gold, judgments, k) if tallied else None
        path = QuestionPath(judgments, k, "doc", check, tally)
        assert path.plain_ok == (tally is None or tally.plain)
        path.plain_ok = path.plain_ok and plain
        paths.append((path, check, tally))
    (fast, fast_check, fast_tally), (slow, slow_check, slow_tally) = paths
    plain = 0
    for which, value, latency in outcomes:
        error = "boom" if value is None else None
        outcome = Outcome(items[which], value, error, None if error else latency)
        kept = fast.plain(outcome) if fast.plain_ok else None
        plain += kept is not None
        got, want = kept or fast.general(outcome), slow.take(outcome)
        assert repr(got[0]) == repr(want[0]) and got[0] == want[0]
        assert json.dumps(got[0].extra) == json.dumps(want[0].extra)  # stored bytes, key order
        assert list(got[1].items()) == list(want[1].items())
        assert all(type(a) is type(b) for a, b in zip(got[0].hits, want[0].hits, strict=True))
    assert _state(fast_check, fast_tally) == _state(slow_check, slow_tally)
    if fast_tally is not None and slow_tally is not None:
        metrics = ["mrr", "recall@3", "ndcg@3", "precision@3", "hit_rate@3"]
        assert score_inputs(fast_tally.inputs, metrics) == score_inputs(slow_tally.inputs, metrics)
    return plain


def test_the_plain_way_is_taken_for_plain_questions() -> None:
    gold = _gold_set([([("a.md", 1)], False), ([("b.md", 2), ("c.md", 1)], False)])
    judgments = Judgments.build(gold, "doc")
    tally = Tally.start(gold, judgments, 3)
    path = QuestionPath(judgments, 3, "doc", IdCheck.for_run(gold, None, None), tally)
    assert path.plain_ok
    hits = [Hit("c.md", "c.md", 2.0), Hit("b.md#1", "b.md", 1.0, "text"), Hit("z.md", "z.md")]
    for item in gold:
        kept = path.plain(Outcome(item, RetrievalOutput(hits), None, 1.0))
        assert kept is not None
    assert kept[0].extra == {"grades": [1, 2, 0], "texts": [None, "text", None]}
    assert kept[1] == {"first": 1, "top": 3, "gold": 2}
    assert tally.inputs.rankings["q1"] == ("c.md", "b.md", "z.md")
    # Not plain: an answer, a repeated id, a text to cut.
    item = gold["q0"]
    for value in (
        RetrievalOutput(hits, answer="yes"),
        RetrievalOutput([hits[0], hits[0]]),
        RetrievalOutput([Hit("a.md", "a.md", text=LONG)]),
    ):
        assert path.plain(Outcome(item, value, None, 1.0)) is None
