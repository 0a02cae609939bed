"""Issue 29.2: the per-question path of ``evaluate()`` takes short cuts; each must give what
the plain way gives. Each short cut is compared with a reference written here on thousands of
generated inputs: the stored summary (one pass over the hits), the stored texts, the id
check's resolution of ids seen before, and the result made by setting its slots."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError
from ragmeter.evaluation import per_question
from ragmeter.evaluation.hit_text import CUT_MARK, annotate_texts
from ragmeter.evaluation.summary import row_summary
from ragmeter.retrievers.ids import IdCheck
from ragmeter.run import QuestionResult


def _reference_summary(result: QuestionResult, k: int, level: str) -> dict[str, Any]:
    """The summary spelled out: the distinct items (documents at doc level) in rank order,
    each with the grade stored at its first position (0 when none is stored)."""
    grades = list(result.extra.get("grades") or [])
    distinct: list[int] = []  # the grade of each distinct item, in order
    keys: list[str] = []
    for rank, hit in enumerate(result.hits):
        key = hit.doc if level == "doc" else hit.id
        if key not in keys:
            keys.append(key)
            distinct.append(grades[rank] if rank < len(grades) else 0)
    relevant = [n for n, grade in enumerate(distinct, start=1) if grade > 0]
    top = distinct[: max(k, 0)]
    out: dict[str, Any] = {
        "first": relevant[0] if relevant else None,
        "top": len(top),
        "gold": len([grade for grade in top if grade > 0]),
    }
    if result.answer is not None or "generation_error" in result.extra:
        used = {c.get("id") for c in result.extra.get("context") or []}
        out["ctx"] = any(
            grade > 0 and (not used or hit.id in used)
            for hit, grade in zip(result.hits, grades, strict=False)
        )
        if "generation_error" in result.extra:
            out["gen"] = result.extra["generation_error"]
    return out


def _random_hits(rng: random.Random, n: int) -> tuple[Hit, ...]:
    hits = []
    for _ in range(n):
        doc = rng.choice("abcd")
        ident = doc if rng.random() < 0.4 else f"{doc}#{rng.randint(0, 3)}"
        hits.append(Hit(ident, doc))
    return tuple(hits)


def test_the_one_pass_summary_is_the_reference_s() -> None:
    rng = random.Random(29)
    for _ in range(6000):
        hits = _random_hits(rng, rng.randint(0, 8))
        extra: dict[str, Any] = {}
        if rng.random() < 0.9:
            n_grades = len(hits) + rng.choice([0, 0, 0, -1, -3, 2])
            extra["grades"] = [rng.choice([0, 0, 1, 2]) for _ in range(max(n_grades, 0))]
        if rng.random() < 0.2:
            extra["context"] = [{"id": h.id} for h in hits if rng.random() < 0.5]
        if rng.random() < 0.1:
            extra["generation_error"] = "boom"
        answer = rng.choice([None, None, "yes"])
        result = QuestionResult("q", hits, answer=answer, extra=extra)
        k, level = rng.randint(-1, 9), rng.choice(["doc", "passage", "chunk"])
        assert row_summary(result, k, level) == _reference_summary(result, k, level), (
            hits,
            extra,
            k,
            level,
        )


def _reference_texts(hits: Sequence[Any], limit: int) -> dict[str, Any]:
    texts = [h.text for h in hits]
    out: dict[str, Any] = {
        "texts": [t if t is None or len(t) <= limit else t[:limit] + CUT_MARK for t in texts]
    }
    cut = [n for n, t in enumerate(texts, start=1) if t is not None and len(t) > limit]
    if cut:
        out["texts_cut"] = cut
    return out


def test_stored_texts_are_the_reference_s() -> None:
    rng = random.Random(15)
    for _ in range(3000):
        limit = rng.randint(0, 6)
        hits = [
            Hit("a", "a", text=rng.choice([None, None, "", "x" * rng.randint(0, 9)]))
            for _ in range(rng.randint(0, 6))
        ]
        assert annotate_texts(hits, limit) == _reference_texts(hits, limit), (hits, limit)


def test_a_result_made_by_its_slots_is_the_dataclass_s() -> None:
    assert per_question._made_result is not per_question._built  # in use on this Python
    hits = (Hit("a#1", "a", 1.0), Hit("b", "b"))
    for latency in (None, 0.5):
        for answer in (None, "", "an answer"):
            for extra in ({}, {"grades": [1, 0], "texts": [None, None]}):
                made = per_question._made_result("q", hits, latency, answer, extra)
                built = QuestionResult("q", hits, latency, None, answer, extra)
                assert (type(made), repr(made), made) == (type(built), repr(built), built)
                with pytest.raises(AttributeError):
                    made.error = "x"  # type: ignore[misc]  # still frozen


def _reference_resolve(check: IdCheck, hits: Sequence[Hit]) -> list[Hit]:
    """``IdCheck.resolve`` without its memory of ids that resolve to themselves."""
    out = []
    for hit in hits:
        found = check.resolver.resolve(hit.doc)
        if found.problem is not None:
            check._failure = check._failure or found.problem
        if found.target is None or found.target == hit.doc:
            out.append(hit)
        else:
            ident = found.target if hit.id == hit.doc else hit.id
            out.append(Hit(ident, found.target, hit.score, hit.text, hit.start, hit.end))
    return out


def _finished(check: IdCheck) -> tuple[list[str], list[str]] | str:
    try:
        return check.finish(), check.notes
    except ConfigError as error:
        return f"error: {error}"


SPELLINGS = [
    "guide/a.md",
    "./guide/a.md",
    "guide\\a.md",
    "GUIDE/A.md",
    "docs/guide/a.md",
    "a.md",
    "b.md",
    "x/b.md",
    "index.md",
    "c.md",
    "elsewhere.md",
    "7f3e",
]


@pytest.mark.parametrize("corpus", [None, ["guide/a.md", "b.md", "x/index.md", "y/index.md"]])
def test_ids_resolved_before_are_resolved_as_the_resolver_says(corpus: list[str] | None) -> None:
    rng = random.Random(243)
    for _ in range(300):
        gold = {"guide/a.md", "b.md", "x/index.md"}
        fast, slow = IdCheck(gold_docs=gold, corpus=corpus), IdCheck(gold_docs=gold, corpus=corpus)
        for _ in range(rng.randint(1, 12)):
            docs = [rng.choice(SPELLINGS[: rng.randint(1, len(SPELLINGS))]) for _ in range(5)]
            hits = [Hit(d if rng.random() < 0.5 else f"{d}#1", d) for d in docs]
            got, want = fast.resolve(hits), _reference_resolve(slow, hits)
            assert [(h.id, h.doc) for h in got] == [(h.id, h.doc) for h in want], docs
            fast.observe(got)
            slow.observe(want)
        assert _finished(fast) == _finished(slow)
