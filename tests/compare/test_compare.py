"""Comparing two runs question by question: deltas, per-tag regressions, flips (issue 5).

The runs are constructed so every expected number can be counted by hand.
"""

from __future__ import annotations

import doctest
import json
import random

import numpy as np
import pytest

import ragmeter.compare.comparison
from ragmeter.compare.comparison import compare_runs, question_flips
from ragmeter.compare.stats import paired_bootstrap_ci, paired_randomization_test
from ragmeter.errors import InputError

Run = dict[str, dict[str, float]]


def _sneaky_candidate() -> tuple[Run, Run, dict[str, list[str]]]:
    """200 questions; B raises hit@5 by 0.05 overall and drops `colloquial` by 0.2.

    - 40 colloquial questions: A finds 30, B finds 22 (8 newly missed): 0.75 -> 0.55.
    - 160 formal questions: A finds 100, B finds 118 (18 newly found): 0.625 -> 0.7375.
    - Overall: 130/200 = 0.65 -> 140/200 = 0.70.
    - 20 formal questions tagged `policies` are unchanged (10 found by both, 10 by neither).
    `mrr` moves the same way but colloquial only drops by 0.05: below the threshold.
    """
    hit_a: dict[str, float] = {}
    hit_b: dict[str, float] = {}
    mrr_a: dict[str, float] = {}
    mrr_b: dict[str, float] = {}
    tags: dict[str, list[str]] = {}
    for i in range(40):
        item = f"c{i:03d}"
        tags[item] = ["colloquial"]
        hit_a[item] = 1.0 if i < 30 else 0.0
        hit_b[item] = 1.0 if i < 22 else 0.0
        mrr_a[item] = 0.5
        mrr_b[item] = 0.5 if i >= 4 else 0.0  # 4 * 0.5 / 40 = 0.05 drop
    for i in range(160):
        item = f"f{i:03d}"
        tags[item] = ["formal", "policies"] if i < 10 or i >= 150 else ["formal"]
        hit_a[item] = 1.0 if i < 100 else 0.0
        hit_b[item] = 1.0 if i < 118 else 0.0
        mrr_a[item] = 0.5
        mrr_b[item] = 1.0 if 100 <= i < 118 else 0.5
    return {"hit@5": hit_a, "mrr": mrr_a}, {"hit@5": hit_b, "mrr": mrr_b}, tags


def test_cluster_regression_hidden_by_overall_gain_is_flagged() -> None:
    """Issue 5: +0.05 hit@5 overall while `colloquial` drops 0.2 must be flagged."""
    a, b, tags = _sneaky_candidate()
    c = compare_runs(a, b, tags=tags, metrics=["hit@5", "mrr"])

    hit = c.metric("hit@5")
    assert (hit.n, hit.mean_a, hit.mean_b) == (200, 0.65, 0.70)
    assert hit.delta == pytest.approx(0.05, abs=1e-12)
    assert hit.ci_low < 0.05 < hit.ci_high
    assert not hit.exact  # 26 questions differ: Monte Carlo

    rows = {(t.tag, t.metric): t for t in c.tags}
    colloquial = rows["colloquial", "hit@5"]
    assert (colloquial.n, colloquial.mean_a, colloquial.mean_b) == (40, 0.75, 0.55)
    assert colloquial.delta == pytest.approx(-0.2, abs=1e-12)
    # 8 questions differ, all the same way: 2 of the 2**8 sign flips are as extreme.
    assert colloquial.p_value == 2 / 256
    # Holm over 3 tags: formal first, then colloquial times 2, then policies. Formal's 18
    # differences all go one way (exact p = 2 / 2**18): Monte Carlo's 10,000 flips see
    # 0 or 1 as extreme (p = 1/10001 or 2/10001, depending on the random stream).
    assert rows["formal", "hit@5"].p_value <= 2 / 10_001
    assert colloquial.p_holm == pytest.approx(2 * 2 / 256)
    assert rows["policies", "hit@5"].p_value == 1.0
    assert rows["policies", "hit@5"].p_holm == 1.0

    assert [(t.tag, t.metric) for t in c.flagged] == [("colloquial", "hit@5")]
    assert not rows["colloquial", "mrr"].flagged  # dropped 0.05 < threshold 0.1
    assert rows["colloquial", "mrr"].delta == pytest.approx(-0.05, abs=1e-12)


def test_identical_runs_have_p_one_and_no_flags() -> None:
    """Issue 5: identical runs give p = 1, a zero interval and no flags."""
    a, _, tags = _sneaky_candidate()
    c = compare_runs(a, a, tags=tags, metrics=["hit@5", "mrr"])
    for row in c.metrics:
        assert (row.delta, row.ci_low, row.ci_high, row.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert all(t.p_value == 1.0 and t.p_holm == 1.0 and t.delta == 0.0 for t in c.tags)
    assert c.flagged == []
    assert (c.only_a, c.only_b) == ([], [])


def test_statistics_are_those_of_the_paired_functions() -> None:
    """Issue 5: the metric row carries ragmeter.compare.stats' interval and p on sorted questions."""
    a, b, tags = _sneaky_candidate()
    c = compare_runs(a, b, tags=tags, metrics=["hit@5"], seed=3)
    ids = sorted(a["hit@5"])
    xa = np.array([a["hit@5"][i] for i in ids])
    xb = np.array([b["hit@5"][i] for i in ids])
    row = c.metric("hit@5")
    assert (row.ci_low, row.ci_high) == paired_bootstrap_ci(xa, xb, seed=3)
    assert row.p_value == paired_randomization_test(xa, xb, seed=3).p_value


def test_no_flag_when_the_total_got_worse() -> None:
    """Issue 5: the flag is for a drop hidden by a gain; a total drop is the gate's job."""
    a, b, tags = _sneaky_candidate()
    c = compare_runs(b, a, tags=tags, metrics=["hit@5"])  # swapped: formal now drops
    assert c.metric("hit@5").delta < 0
    assert c.flagged == []


def test_drop_of_exactly_the_threshold_is_flagged() -> None:
    """Issue 5: a tag that drops by exactly tag_drop_threshold counts, despite float noise."""
    a, b, tags = _sneaky_candidate()
    c = compare_runs(a, b, tags=tags, metrics=["hit@5"], tag_drop_threshold=0.2)
    assert [t.tag for t in c.flagged] == ["colloquial"]
    c = compare_runs(a, b, tags=tags, metrics=["hit@5"], tag_drop_threshold=0.21)
    assert c.flagged == []


def test_only_shared_questions_are_compared_and_the_rest_reported() -> None:
    """Issue 5: questions in one run only are listed, never mixed into the means."""
    a = {"hit@5": {"q1": 1.0, "q2": 0.0, "gone": 1.0}}
    b = {"hit@5": {"q1": 1.0, "q2": 1.0, "new": 0.0, "new2": 0.0}}
    c = compare_runs(a, b, tags={}, metrics=["hit@5"])
    assert (c.n, c.only_a, c.only_b) == (2, ["gone"], ["new", "new2"])
    row = c.metric("hit@5")
    assert (row.mean_a, row.mean_b, row.delta) == (0.5, 1.0, 0.5)
    assert c.tags == []


def test_result_does_not_depend_on_dict_order() -> None:
    """Issue 5: the seeded statistics see questions in id order, whatever the input order."""
    a, b, tags = _sneaky_candidate()
    shuffled = random.Random(1)

    def shuffle(run: Run) -> Run:
        out: Run = {}
        for metric, values in run.items():
            items = list(values.items())
            shuffled.shuffle(items)
            out[metric] = dict(items)
        return out

    first = compare_runs(a, b, tags=tags, metrics=["hit@5", "mrr"])
    assert compare_runs(shuffle(a), shuffle(b), tags=tags, metrics=["hit@5", "mrr"]) == first


def test_to_dict_is_json_and_states_the_correction() -> None:
    """Issue 5: --json output: plain JSON with the Holm correction stated."""
    a, b, tags = _sneaky_candidate()
    data = json.loads(json.dumps(compare_runs(a, b, tags=tags, metrics=["hit@5"]).to_dict()))
    assert data["correction"] == "holm"
    assert any("Holm" in note for note in data["notes"])
    # Issue 26: a flag carries its interval and Holm-adjusted p (the evidence it needs).
    assert data["flagged"] == [
        {"tag": "colloquial", "metric": "hit@5", "delta": pytest.approx(-0.2),
         "ci_low": pytest.approx(-0.33, abs=0.005), "ci_high": pytest.approx(-0.07, abs=0.005),
         "p_holm": pytest.approx(0.016, abs=0.001)}
    ]  # fmt: skip
    assert data["metrics"][0]["metric"] == "hit@5"
    assert {t["tag"] for t in data["tags"]} == {"colloquial", "formal", "policies"}
    assert data["n"] == 200 and data["only_a"] == [] and data["confidence"] == 0.95


def test_default_metrics_are_those_both_runs_have() -> None:
    """Issue 5: without metrics=..., every metric present in both runs is compared."""
    a, b, tags = _sneaky_candidate()
    b = {**b, "ndcg@5": b["mrr"]}
    c = compare_runs(a, b, tags=tags)
    assert [m.metric for m in c.metrics] == ["hit@5", "mrr"]


def test_question_flips() -> None:
    """Issue 5: newly missed and newly found questions, by id."""
    a, b, _ = _sneaky_candidate()
    missed, found = question_flips(a, b, "hit@5")
    assert missed == [f"c{i:03d}" for i in range(22, 30)]
    assert found == [f"f{i:03d}" for i in range(100, 118)]
    assert question_flips(a, a, "hit@5") == ([], [])


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ({"mrr": {"q1": 1.0}}, {"hit@5": {"q1": 1.0}}, 'run A: no values for metric "hit@5"'),
        (
            {"hit@5": {"q1": 1.0}, "mrr": {"q1": 1.0, "q2": 0.0}},
            {"hit@5": {"q1": 1.0, "q2": 1.0}},
            'run A item q2: no value for metric "hit@5"',
        ),
        (
            {"hit@5": {"q1": 1.0}},
            {"hit@5": {"q1": float("nan")}},
            'run B item q1: metric "hit@5" is nan',
        ),
        ({"hit@5": {"q1": 1.0}}, {"hit@5": {"q2": 1.0}}, "no questions in common"),
    ],
    ids=["missing-metric", "missing-item-value", "nan", "disjoint"],
)
def test_bad_runs_raise_input_error_naming_what_is_wrong(a: Run, b: Run, message: str) -> None:
    """Issue 5: a run that lacks a metric or value is an input error naming run, item, metric."""
    with pytest.raises(InputError) as info:
        compare_runs(a, b, tags={}, metrics=["hit@5"])
    assert message in str(info.value)


def test_docstring_examples_hold() -> None:
    """Issue 5: the examples in ragmeter.compare.comparison's docstrings are true."""
    failures, tried = doctest.testmod(ragmeter.compare.comparison)
    assert tried > 0 and failures == 0
