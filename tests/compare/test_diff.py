"""``diff_runs``: two runs evaluated into a real SQLite store, compared (issue 5).

The runs are built by ``ragmeter.evaluate`` with deterministic retrievers
(``tests/_runs.py``), so which question each run finds is known exactly.
"""

from __future__ import annotations

import doctest
import json
from collections.abc import Iterator

import pytest

import ragmeter.compare.diff
from _runs import (
    BASE_FOUND,
    COLLOQUIAL,
    FORMAL,
    NEWLY_FOUND,
    NEWLY_MISSED,
    gold_set,
    question,
    run,
    sneaky_store,
)
from ragmeter.compare.diff import diff_runs
from ragmeter.errors import InputError, NotComparableError, RunNotFoundError
from ragmeter.store import Store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = sneaky_store(tmp_path_factory.mktemp("diff") / "r.db")
    with Store.open(path) as opened:
        yield opened


def test_sneaky_candidate_is_flagged_on_the_colloquial_tag(store: Store) -> None:
    """Issue 5: +0.05 overall on hit@5 while `colloquial` drops by 0.2 is flagged."""
    d = diff_runs(store, "baseline", "sneaky")
    hit = d.comparison.metric("hit@5")
    assert (hit.mean_a, hit.mean_b) == pytest.approx((0.65, 0.70))
    assert hit.delta == pytest.approx(0.05)
    assert hit.n == 200 and d.n == 200
    colloquial = next(t for t in d.tags if t.tag == "colloquial" and t.metric == "hit@5")
    assert (colloquial.n, colloquial.mean_a, colloquial.mean_b) == (40, 0.75, 0.55)
    assert colloquial.delta == pytest.approx(-0.2)
    assert colloquial.flagged
    # 8 questions changed, all for the worse: exact test, 2 of 2**8 sign patterns.
    assert colloquial.p_value == pytest.approx(2 / 256)
    # Holm over 3 tags: `formal` has the smallest p (x3), `colloquial` comes second (x2).
    formal = next(t for t in d.tags if t.tag == "formal" and t.metric == "hit@5")
    assert formal.p_value < colloquial.p_value
    assert colloquial.p_holm == pytest.approx(max(3 * formal.p_value, 2 * 2 / 256))
    flagged = {(t.tag, t.metric) for t in d.flagged}
    assert ("colloquial", "hit@5") in flagged
    assert not any(tag in ("formal", "policies") for tag, _ in flagged)


def test_flips_carry_question_tags_and_first_relevant_rank(store: Store) -> None:
    """Issue 5: newly missed / newly found list question, tags and rank in A and in B."""
    d = diff_runs(store, "baseline", "sneaky")
    assert d.flip_metric == "hit@10"
    assert [f.id for f in d.newly_missed] == NEWLY_MISSED
    assert [f.id for f in d.newly_found] == NEWLY_FOUND
    first = d.newly_missed[0]
    assert first.question == question(first.id)
    assert first.tags == ["colloquial"]
    # The retriever puts the answer behind sum(ord(id)) % 3 noise hits.
    assert first.rank_a == sum(map(ord, first.id)) % 3 + 1
    assert first.rank_b is None
    assert all(f.rank_a is None and f.rank_b is not None for f in d.newly_found)


def test_identical_runs_give_p_one_no_flags_no_flips(store: Store) -> None:
    """Issue 5: identical runs: p = 1 and a zero interval for every metric, nothing flagged."""
    d = diff_runs(store, "baseline", "same")
    assert d.metrics, "some metrics must be compared"
    for m in d.metrics:
        assert m.p_value == 1.0 and m.exact
        assert (m.delta, m.ci_low, m.ci_high) == (0.0, 0.0, 0.0)
    assert all(t.p_value == 1.0 and t.p_holm == 1.0 for t in d.tags)
    assert d.flagged == []
    assert d.newly_missed == [] and d.newly_found == []
    assert d.warnings == [] and not d.gold_differs


def test_uniform_improvement_over_200_questions_is_significant(store: Store) -> None:
    """Issue 5: 30 of 200 questions newly found and none lost is significant."""
    d = diff_runs(store, "baseline", "uniform", metrics=["hit@5"])
    hit = d.metrics[0]
    assert hit.delta == pytest.approx(0.15)
    assert hit.p_value < 0.001
    assert 0.0 < hit.ci_low < 0.15 < hit.ci_high
    assert d.flagged == [] and d.newly_missed == []
    assert len(d.newly_found) == 30


def test_the_same_seed_gives_the_same_numbers(store: Store) -> None:
    """Issue 5: intervals and p-values are seeded and reproducible."""
    one = diff_runs(store, "baseline", "sneaky", metrics=["mrr"], seed=7).to_dict()
    two = diff_runs(store, "baseline", "sneaky", metrics=["mrr"], seed=7).to_dict()
    assert one["metrics"] == two["metrics"] and one["tags"] == two["tags"]


def test_metric_names_are_canonicalised_and_latency_is_run_level(store: Store) -> None:
    """Issue 5: -m takes ir_measures spellings; latency has no per-question test."""
    d = diff_runs(store, "baseline", "sneaky", metrics=["nDCG@5", "P@5", "latency_p95_ms"])
    assert [m.metric for m in d.metrics] == ["ndcg@5", "precision@5"]
    assert [r.metric for r in d.run_level] == ["latency_p95_ms"]
    r = d.run_level[0]
    assert r.delta == pytest.approx(r.value_b - r.value_a)


def test_unknown_metric_and_unknown_run_are_input_errors(store: Store) -> None:
    """Issue 5: a metric the runs lack or a run that does not exist is a clear error."""
    with pytest.raises(InputError, match='no metric "recall@100"'):
        diff_runs(store, "baseline", "sneaky", metrics=["recall@100"])
    with pytest.raises(RunNotFoundError):
        diff_runs(store, "baseline", "no-such-run")


def test_different_gold_sets_are_refused_before_any_statistics(file_store: Store) -> None:
    """Issue 15.2 (was issue 5's warning): runs on different gold sets are not diffed at
    all; previously the shared questions were compared with a warning."""
    ids_a = [f"q{i:02d}" for i in range(30)]
    ids_b = ids_a[2:] + ["new1", "new2", "new3"]
    run(file_store, gold_set((i, ["t"]) for i in ids_a), set(ids_a[:10]), "old")
    run(file_store, gold_set((i, ["t"]) for i in ids_b), set(ids_b[:10]), "new")
    with pytest.raises(NotComparableError, match="different gold set") as refused:
        diff_runs(file_store, "old", "new", metrics=["hit@5"])
    assert refused.value.exit_code == 2


def test_error_rows_are_reported_and_count_as_misses(file_store: Store) -> None:
    """Issue 5: a question whose retrieval failed in B is a newly missed flip with its error."""
    ids = [f"q{i:02d}" for i in range(20)]
    gold = gold_set((i, ["t"]) for i in ids)
    run(file_store, gold, set(ids), "a")
    run(file_store, gold, set(ids), "b", fail={"q03"})
    d = diff_runs(file_store, "a", "b", metrics=["hit@5"])
    assert [f.id for f in d.newly_missed] == ["q03"]
    assert d.newly_missed[0].error_b is not None and "backend down" in d.newly_missed[0].error_b
    assert any("1 error rows" in w for w in d.warnings)


def test_to_dict_is_json_and_markdown_states_the_correction(store: Store) -> None:
    """Issue 5: JSON output round-trips; the report states the Holm correction."""
    d = diff_runs(store, "baseline", "sneaky")
    data = json.loads(json.dumps(d.to_dict()))
    assert data["a"]["name"] == "baseline" and data["b"]["name"] == "sneaky"
    assert data["correction"] == "holm"
    flags = [{k: f[k] for k in ("tag", "metric", "delta")} for f in data["flagged"]]
    assert {"tag": "colloquial", "metric": "hit@5", "delta": pytest.approx(-0.2)} in flags
    assert [f["id"] for f in data["newly_missed"]] == NEWLY_MISSED
    assert data["health"]["b"]["checks"]
    md = d.to_markdown(max_flips=3)
    assert "| metric | A | B | Δ | 95% CI | p |" in md
    assert "Holm-adjusted across the tags" in md
    assert "| colloquial | hit@5 | 40 | 0.750 | 0.550 | -0.200 |" in md
    assert "… and 5 more" in md  # 8 newly missed, 3 shown


def test_formal_and_colloquial_sizes_match_the_construction() -> None:
    """Issue 5: the constructed data is what the docstrings say (guards the fixtures)."""
    assert len(COLLOQUIAL) == 40 and len(FORMAL) == 160
    assert len(BASE_FOUND) == 130


def test_docstring_examples_hold() -> None:
    """Issue 5: the examples in ragmeter.compare.diff's docstrings are true."""
    failures, tried = doctest.testmod(ragmeter.compare.diff)
    assert tried > 0 and failures == 0
