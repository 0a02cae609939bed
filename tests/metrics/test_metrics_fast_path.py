"""The vectorised dict path of compute_metrics against the per-query path (issue 16.4).

``compute_metrics`` takes a vectorised path when every ranking is a dict of scores and
a per-query loop otherwise (ranked lists). A dict ranking and the list of its documents
in trec_eval order (score descending, ties by id descending) must score identically, to
the last bit, for every metric, on inputs with ties, missing and empty rankings, grades
-1..3, rankings of equal and of unequal lengths.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragmeter.errors import InputError
from ragmeter.metrics import compute_metrics
from ragmeter.metrics._ranks import PACK_BATCH, scored_ranks

METRICS = [
    "ndcg@10",
    "ndcg",
    "ndcg(dcg=exp-log2)@5",
    "map",
    "map@5",
    "mrr",
    "mrr@3",
    "recall@5",
    "precision@3",
    "hit@1",
    "rprec",
    "f1@5",
    "rbp(p=0.8)",
    "dcg@5",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "judged@5",
    "bpref",
    "precision(rel=2)@5",
    "map(judged_only=true)",
]


def _random_case(
    seed: int, equal_lengths: bool
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    depth = rng.randint(1, 12)
    for q in range(rng.randint(1, 25)):
        qid = f"q{q}"
        docs = [f"d{rng.randint(0, 30)}" for _ in range(40)]
        qrels[qid] = {doc: rng.randint(-1, 3) for doc in docs[: rng.randint(0, 8)]}
        if rng.random() < 0.15:
            continue  # missing from the run
        size = depth if equal_lengths else rng.randint(0, 12)
        pool = list(dict.fromkeys(docs))[:size]
        # few distinct scores, so ties are common
        run[qid] = {doc: float(rng.randint(0, 4)) / 2 for doc in pool}
    return qrels, run


def _as_lists(run: dict[str, dict[str, float]]) -> dict[str, list[str]]:
    return {
        qid: sorted(ranking, key=lambda d: (ranking[d], d), reverse=True)
        for qid, ranking in run.items()
    }


@pytest.mark.parametrize("equal_lengths", [True, False], ids=["equal-lengths", "ragged"])
def test_dict_path_agrees_with_the_per_query_path(equal_lengths: bool) -> None:
    """Issue 16.4: the vectorised dict path (matrix layout for equal lengths, segments
    otherwise) gives exactly the per-query path's values for every metric."""
    for seed in range(60):
        qrels, run = _random_case(seed, equal_lengths)
        fast = compute_metrics(qrels, run, METRICS)
        slow = compute_metrics(qrels, _as_lists(run), METRICS)
        assert fast.per_query == slow.per_query, seed
        assert fast.means == slow.means
        assert fast.missing == slow.missing


@pytest.mark.parametrize(
    ("bad", "shown"),
    [(None, "NoneType None"), ("1.5", "str '1.5'"), (b"2", "bytes b'2'")],
    ids=["none", "numeric-string", "bytes"],
)
@pytest.mark.parametrize("size", [3, PACK_BATCH + 5], ids=["short-ranking", "long-ranking"])
def test_a_score_that_is_not_a_number_names_its_query(bad: object, shown: str, size: int) -> None:
    """Issue 16.4: a score that is not a number is an error naming the query. Previously
    numpy read the string "1.5" as 1.5 and None as NaN ("a score is NaN")."""
    run: dict[str, dict[str, object]] = {
        f"q{i}": {f"d{j}": float(j) for j in range(size)} for i in range(40)
    }
    run["q17"]["d1"] = bad
    qrels = {f"q{i}": {"d1": 1} for i in range(40)}
    with pytest.raises(InputError, match=f"run query q17: a score is not a number \\({shown}"):
        compute_metrics(qrels, run, ["mrr"])


def test_numbers_of_any_kind_are_scores() -> None:
    """Issue 16.4: ints, bools and numpy numbers are scores, as before."""
    run = {"q": {"a": 2, "b": np.float32(1.5), "c": True, "d": np.int64(3)}}
    result = compute_metrics({"q": {"a": 1, "c": 1}}, run, ["map"])
    assert result.per_query["map"] == {"q": (1 / 2 + 2 / 4) / 2}


def test_a_grade_that_is_not_a_number_is_not_parsed() -> None:
    """Issue 16.4: the vectorised path never reads a string grade as a number; such
    qrels go to the per-query path, which refuses them as before."""
    with pytest.raises(TypeError):
        compute_metrics({"q": {"a": "1"}}, {"q": {"a": 1.0}}, ["mrr"])  # type: ignore[dict-item]


@pytest.mark.parametrize("max_comparisons", [1, 5, 1 << 23])
def test_equal_length_rankings_in_batches(max_comparisons: int) -> None:
    """Issue 16.4: with rankings of one length (the matrix layout) the ranks are
    trec_eval's (ties by doc id descending) however the comparisons are batched."""
    rankings = [
        {"a": 1.0, "b": 3.0, "c": 3.0},
        {"x": 2.0, "y": 2.0, "z": 9.0},
        {"p": 1.0, "q": 1.0, "r": 1.0},
    ]
    entries = [(0, "a"), (0, "b"), (0, "c"), (1, "x"), (1, "z"), (2, "p"), (2, "q"), (2, "r")]
    ranks = scored_ranks(
        ["q0", "q1", "q2"],
        rankings,
        [q for q, _ in entries],
        [d for _, d in entries],
        max_comparisons=max_comparisons,
    )
    assert ranks.tolist() == [3, 2, 1, 3, 1, 3, 2, 1]


def test_short_rankings_across_pack_batches() -> None:
    """Issue 16.4: short rankings packed PACK_BATCH scores at a time keep their order:
    each query's relevant document is found at its own rank across batch boundaries."""
    rng = random.Random(7)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    expected: dict[str, float] = {}
    for q in range(3 * PACK_BATCH // 5):
        size = rng.randint(1, 9)
        run[f"q{q}"] = {f"d{j}": float(size - j) for j in range(size)}
        target = rng.randrange(size)
        qrels[f"q{q}"] = {f"d{target}": 1}
        expected[f"q{q}"] = 1 / (target + 1)
    assert compute_metrics(qrels, run, ["mrr"]).per_query["mrr"] == expected
