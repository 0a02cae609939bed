"""``check_gate`` and the pull-request report over real stored runs (issue 5)."""

from __future__ import annotations

import doctest
from collections.abc import Iterator

import pytest

import ragmeter.compare.gate
from _runs import FORMAL, NEWLY_MISSED, gold_set, run, sneaky_store
from ragmeter.compare.diff import RunDiff, diff_runs
from ragmeter.compare.gate import GateRules, check_gate, gate_markdown
from ragmeter.errors import ConfigError, InputError, MetricNameError
from ragmeter.store import Store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = sneaky_store(tmp_path_factory.mktemp("gate") / "r.db")
    with Store.open(path) as opened:
        yield opened


@pytest.fixture(scope="module")
def sneaky(store: Store) -> RunDiff:
    return diff_runs(store, "baseline", "sneaky")


def test_sneaky_candidate_fails_the_gate_naming_the_cluster(sneaky: RunDiff) -> None:
    """Issue 5: hit@5 +0.05 passes its own rule, but the colloquial drop fails the gate."""
    result = check_gate(sneaky, GateRules.parse(["hit@5=0.02"]))
    assert not result.passed and result.exit_code == 1
    assert result.reasons == [
        'cluster "colloquial": hit@5 dropped by 0.200 (0.750 -> 0.550, n = 40; 95% CI '
        "[-0.330, -0.070]), more than the allowed 0.1 (Holm-adjusted p = 0.016) although "
        "hit@5 overall went +0.050"
    ]
    strict = check_gate(sneaky, GateRules.parse(["hit@5=0.02"], strict=True))
    assert strict.reasons == [
        'cluster "colloquial": hit@5 dropped by 0.200 (0.750 -> 0.550, n = 40), more than '
        "the allowed 0.1 (Holm-adjusted p = 0.016) although hit@5 overall went +0.050"
    ]
    assert [(t.tag, t.metric) for t in result.failed_tags] == [("colloquial", "hit@5")]


def test_sneaky_candidate_fails_even_with_significance_required(sneaky: RunDiff) -> None:
    """Issue 5: the cluster drop is significant after Holm, so it still fails."""
    rules = GateRules.parse(["hit@5=0.02"], require_significance=True)
    assert not check_gate(sneaky, rules).passed


def test_identical_runs_pass(store: Store) -> None:
    """Issue 5: identical runs pass every rule."""
    d = diff_runs(store, "baseline", "same")
    rules = GateRules.parse(["hit@5=0", "mrr=0"], ["hit@5=0.6"], tag_max_drop=0.0)
    result = check_gate(d, rules)
    assert result.passed and result.exit_code == 0
    assert result.reasons == [] and result.notes == []


def test_overall_drop_and_minimum_fail_with_numbers(store: Store) -> None:
    """Issue 5: with --strict, a drop past --max-drop and a value under --min each give a
    reason."""
    d = diff_runs(store, "sneaky", "baseline")  # the reverse: hit@5 0.70 -> 0.65
    rules = GateRules.parse(["hit@5=0.02"], ["mrr=0.5"], tag_max_drop=None, strict=True)
    result = check_gate(d, rules)
    assert not result.passed
    assert result.reasons[0].startswith(
        "hit@5 dropped by 0.050 (0.700 -> 0.650), more than the allowed 0.02 (p = 0."
    )
    assert result.reasons[1].startswith("mrr is 0.399, below the minimum 0.5")
    assert len(result.reasons) == 2


def test_a_noisy_overall_drop_is_inconclusive_not_a_failure(store: Store) -> None:
    """Issue 26: hit@5 0.70 -> 0.65 on 200 questions, p = 0.075: not evidence of a real drop
    and not ruled out either, so inconclusive with what the run can detect; it passes
    (exit 0) by default and fails with --fail-inconclusive; the floor still fails."""
    d = diff_runs(store, "sneaky", "baseline")
    result = check_gate(d, GateRules.parse(["hit@5=0.02"], tag_max_drop=None))
    assert result.passed and result.verdict == "inconclusive" and result.reasons == []
    assert result.inconclusive == [
        "hit@5: -0.050 on 200 questions (0.700 -> 0.650; 95% CI [-0.100, +0.000]): "
        "inconclusive (p = 0.075); this run can only detect drops >= 0.07"
    ]
    assert [v.verdict for v in result.verdicts] == ["inconclusive"]
    strict = GateRules.parse(["hit@5=0.02"], tag_max_drop=None, fail_inconclusive=True)
    assert check_gate(d, strict).exit_code == 1
    floor = check_gate(d, GateRules.parse(["hit@5=0.02"], ["mrr=0.5"], tag_max_drop=None))
    assert floor.reasons == ["mrr is 0.399, below the minimum 0.5"]


def test_require_significance_turns_a_noisy_drop_into_a_note(store: Store) -> None:
    """Issue 5: p = 0.075 for the 0.05 drop is not significant at 0.05: a note, not a failure."""
    d = diff_runs(store, "sneaky", "baseline")
    result = check_gate(
        d,
        GateRules.parse(["hit@5=0.02"], tag_max_drop=None, require_significance=True, strict=True),
    )
    assert result.passed
    assert len(result.notes) == 1 and "not significant" in result.notes[0]


def test_tag_check_off_lets_the_sneaky_candidate_through(sneaky: RunDiff) -> None:
    """Issue 5: without the tag rule only the overall numbers are gated."""
    assert check_gate(sneaky, GateRules.parse(["hit@5=0.02"], tag_max_drop=None)).passed


def test_tag_rule_applies_to_named_metrics_only(sneaky: RunDiff) -> None:
    """Issue 5: naming mrr gates mrr's tags (colloquial drops 0.113 > 0.1), not hit@5's."""
    result = check_gate(sneaky, GateRules.parse(["mrr=0.02"]))
    assert [(t.tag, t.metric) for t in result.failed_tags] == [("colloquial", "mrr")]
    result = check_gate(sneaky, GateRules.parse([]))  # nothing named: every metric
    assert {t.metric for t in result.failed_tags} >= {"hit@5", "mrr", "ndcg@10"}


def test_latency_rule_is_lower_is_better(file_store: Store) -> None:
    """Issue 5: --max-drop on latency caps how much p95 may rise; --min on it is refused."""
    ids = [f"q{i}" for i in range(10)]
    gold = gold_set((i, []) for i in ids)
    run(file_store, gold, set(ids), "a")
    run(file_store, gold, set(ids), "b")
    d = diff_runs(file_store, "a", "b")
    rise = d.run_level[[r.metric for r in d.run_level].index("latency_p95_ms")].delta
    generous = GateRules.parse([f"latency_p95_ms={abs(rise) + 1000}"])
    assert check_gate(d, generous).passed
    with pytest.raises(ConfigError, match="latency is better when lower"):
        GateRules.parse([], ["latency_p95_ms=10"])


@pytest.mark.parametrize(
    ("max_drop", "error", "message"),
    [
        ("hit@5", ConfigError, "expected METRIC=NUMBER"),
        ("hit@5=abc", ConfigError, '"abc" is not a number'),
        ("hit@5=-0.1", ConfigError, "finite number >= 0"),
        ("hitz@5=0.1", MetricNameError, "hitz@5"),
    ],
    ids=["no-value", "not-a-number", "negative", "unknown-metric"],
)
def test_bad_rules_are_input_errors(max_drop: str, error: type[Exception], message: str) -> None:
    """Issue 5: a malformed rule is an input error (exit 2) that says what is wrong."""
    with pytest.raises(error, match=message):
        GateRules.parse([max_drop])
    assert issubclass(error, InputError)


def test_rule_for_a_metric_the_diff_lacks_is_an_input_error(sneaky: RunDiff) -> None:
    """Issue 5: gating on recall@100 when the runs stopped at 10 is an error, not a pass."""
    with pytest.raises(InputError, match="no such metric"):
        check_gate(sneaky, GateRules.parse(["recall@100=0.1"]))


def test_markdown_has_verdict_metric_table_flagged_clusters_and_flips(sneaky: RunDiff) -> None:
    """Issue 5: the PR report has the metric table with deltas, flagged clusters, N flips."""
    result = check_gate(sneaky, GateRules.parse(["hit@5=0.02"]))
    md = gate_markdown(sneaky, result, max_flips=2)
    assert md.startswith("## ragmeter gate ❌ failed\n")
    assert "Baseline **run 1 baseline** → candidate **run 3 sneaky** — + query rewriting" in md
    assert '- ❌ cluster "colloquial": hit@5 dropped by 0.200' in md
    assert "| metric | A | B | Δ | 95% CI | p |" in md
    assert "| hit@5 | 0.650 | 0.700 | +0.050 | [" in md
    assert "### Flagged clusters" in md
    assert "| colloquial | hit@5 | 40 | 0.750 | 0.550 | -0.200 |" in md
    assert "Newly missed: 8 questions" in md
    assert f"| {NEWLY_MISSED[0]} |" in md and f"| {NEWLY_MISSED[1]} |" in md
    assert f"| {NEWLY_MISSED[2]} |" not in md
    assert "… and 6 more" in md
    assert "Holm-adjusted" in md


def test_markdown_of_a_passing_gate_says_so(store: Store) -> None:
    """Issue 5: a passing gate's report has no reasons and no flagged clusters."""
    d = diff_runs(store, "baseline", "uniform")
    result = check_gate(d, GateRules.parse(["hit@5=0.02"]))
    md = gate_markdown(d, result)
    # Issue 26: nothing failed, but two tags are too small to rule a drop of 0.1 out.
    assert md.startswith("## ragmeter gate ❔ inconclusive (passing)\n")
    assert "- ❔ hit@5: 2 tags within the allowed 0.1 cannot rule out a larger drop" in md
    assert "<details><summary>Per tag (hit@5): intervals and detectable drops" in md
    assert "| policies | hit@5 | 20 | 1.000 | 1.000 | +0.000 | [-0.168, +0.000] |" in md
    assert "### Flagged clusters\n\nNone." in md
    assert "❌" not in md
    assert f"| {FORMAL[100]} |" in md  # newly found


def test_docstring_examples_hold() -> None:
    """Issue 5: the examples in ragmeter.compare.gate's docstrings are true."""
    failures, tried = doctest.testmod(ragmeter.compare.gate)
    assert tried > 0 and failures == 0
