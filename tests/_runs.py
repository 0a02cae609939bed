"""Constructed runs with known answers, evaluated for real into a SQLite store (issue 5).

Every run goes through ``ragmeter.evaluate`` with a deterministic in-process
retriever: a question whose id is in ``found`` gets its relevant document back at
rank 1-3 behind noise, any other question gets noise only. So the per-question
truth of each run is exactly the ``found`` set, and the expected deltas can be
counted by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

from ragmeter.evaluation.evaluate import evaluate
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

Retriever = Callable[[str, int], list[dict[str, Any]]]


def question(item: str) -> str:
    return f"where is the answer to {item}?"


def gold_set(tagged: Iterable[tuple[str, list[str]]]) -> GoldSet:
    return GoldSet.from_records(
        [
            {
                "id": item,
                "question": question(item),
                "relevant": [{"doc": f"{item}.md"}],
                "tags": tags,
            }
            for item, tags in tagged
        ]
    )


def retriever(found: Collection[str], *, fail: Collection[str] = ()) -> Retriever:
    by_question = {question(item): item for item in {*found, *fail}}

    def search(text: str, k: int) -> list[dict[str, Any]]:
        item = by_question.get(text)
        if item is not None and item in fail:
            raise RuntimeError(f"backend down for {item}")
        noise = [{"doc": f"noise-{n}.md", "score": 1.0 / (n + 1)} for n in range(k)]
        if item is None:
            return noise
        rank = sum(map(ord, item)) % 3  # 0, 1 or 2 noise hits before the answer
        return [*noise[:rank], {"doc": f"{item}.md", "score": 2.0}, *noise[rank:]][:k]

    return search


def run(
    store: Store,
    gold: GoldSet,
    found: Collection[str],
    name: str,
    *,
    note: str = "",
    fail: Collection[str] = (),
    k: int = 10,
) -> int:
    """Evaluate one constructed run into ``store``; returns its id."""
    report = evaluate(
        gold, retriever(found, fail=fail), store=store, k=k, name=name, note=note, commit=""
    )
    return report.run.id


# -- the sneaky candidate ------------------------------------------------------------
# 200 questions. Baseline: 30 of 40 colloquial and 100 of 160 formal found (0.65).
# Candidate: colloquial 22 of 40 (-0.2: 8 newly missed), formal 118 of 160
# (18 newly found): 0.70 overall, +0.05.

COLLOQUIAL = [f"c{i:03d}" for i in range(40)]
FORMAL = [f"f{i:03d}" for i in range(160)]
SNEAKY_GOLD = [(i, ["colloquial"]) for i in COLLOQUIAL] + [
    (i, ["formal", "policies"] if n < 20 else ["formal"]) for n, i in enumerate(FORMAL)
]
BASE_FOUND = set(COLLOQUIAL[:30]) | set(FORMAL[:100])
SNEAKY_FOUND = set(COLLOQUIAL[:22]) | set(FORMAL[:118])
NEWLY_MISSED = COLLOQUIAL[22:30]
NEWLY_FOUND = FORMAL[100:118]
# Uniform improvement: the candidate keeps every baseline hit and finds 30 more.
UNIFORM_FOUND = BASE_FOUND | set(FORMAL[100:130])


def sneaky_store(path: Path) -> Path:
    """A store with runs "baseline", "same" (identical), "sneaky" and "uniform"."""
    gold = gold_set(SNEAKY_GOLD)
    with Store.open(path) as store:
        run(store, gold, BASE_FOUND, "baseline", note="main")
        run(store, gold, BASE_FOUND, "same", note="no change")
        run(store, gold, SNEAKY_FOUND, "sneaky", note="+ query rewriting")
        run(store, gold, UNIFORM_FOUND, "uniform", note="+ hybrid search")
    return path
