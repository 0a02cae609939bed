"""Issue 17.6: judge identity on every verdict, `diff` refusing mixed judges, and
`gate --require-calibrated` — with the lexical judge and a deterministic judge server
on loopback (tests/_openai_server.py, ``mode="judge"``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import ragmeter
from _openai_server import ChatState, serve_chat
from ragmeter.cli import main
from ragmeter.compare.diff import diff_runs
from ragmeter.compare.gate import GateRules, check_gate
from ragmeter.errors import ConfigError
from ragmeter.examples import example_calibration_path
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge import JudgeClient
from ragmeter.judge.prompts import FAITHFULNESS
from ragmeter.judging.calibration import load_calibration_set
from ragmeter.judging.identity import JudgeIdentity
from ragmeter.judging.judge_runs import calibrate, judge_run_faithfulness
from ragmeter.judging.judge_sides import DEFAULT_MIN_KAPPA
from ragmeter.store import Store


def _gold() -> GoldSet:
    rows = [
        ("refund", "How long do refunds take?", "refunds.md"),
        ("ship", "How fast do orders ship?", "shipping.md"),
        ("contact", "How do I contact support?", "faq.md"),
    ]
    return GoldSet.from_records(
        [{"id": i, "question": q, "relevant": [{"doc": d}]} for i, q, d in rows]
    )


def _answered_run(store: Store, name: str) -> int:
    from tests.evaluation.test_generation import answer, search

    run = ragmeter.evaluate(_gold(), search, k=2, store=store, generator=answer, name=name).run
    return run.id


def test_every_verdict_and_judge_run_records_the_judge(
    store: Store, judge_server: ChatState
) -> None:
    """Issue 17.6: model, prompt version and hash, temperature, seed, max tokens and repeats
    are stored on the judge run and on each verdict; temperature and seed reach the server."""
    run_id = _answered_run(store, "gen")
    client = JudgeClient(
        model="judge-a", base_url=judge_server.base_url, temperature=0.5, seed=7, max_tokens=256
    )
    judge_run_faithfulness(store, run_id, client=client)
    config = store.judge_runs(run_id)["faithfulness"]["config"]
    verdicts = store.judge_verdicts(run_id, "faithfulness")
    expected = JudgeIdentity(
        model="judge-a",
        prompt_version=FAITHFULNESS.version,
        prompt_hash=FAITHFULNESS.digest,
        temperature=0.5,
        seed=7,
        max_tokens=256,
        repeats=1,
    )
    assert JudgeIdentity.from_config(config) == expected
    assert verdicts and all(e["verdict"]["judge"] == expected.to_dict() for e in verdicts.values())
    assert {(r["temperature"], r["seed"]) for r in judge_server.requests} == {(0.5, 7)}


def test_prompt_hash_changes_with_the_text_not_only_the_version() -> None:
    """Issue 17.6: an edited prompt whose version was not bumped still has a new identity."""
    from dataclasses import replace

    edited = replace(FAITHFULNESS, system=FAITHFULNESS.system + " Be lenient.")
    assert edited.version == FAITHFULNESS.version
    assert edited.digest != FAITHFULNESS.digest


def test_diff_refuses_faithful_from_different_judges_and_shows_both(
    judge: JudgeClient, file_store: Store, store_path: Path
) -> None:
    """Issue 17.6: `diff` does not subtract `faithful` judged by different models: it lists
    the metric with both means and the differing fields instead of a delta."""
    a, b, c = (_answered_run(file_store, n) for n in ("a", "b", "c"))
    judge_run_faithfulness(file_store, a, client=None)  # lexical
    judge_run_faithfulness(file_store, b, client=judge)
    judge_run_faithfulness(file_store, c, client=None)
    mixed = diff_runs(file_store, a, b)
    same = diff_runs(file_store, a, c)
    assert "faithful" not in [m.metric for m in mixed.metrics]
    assert "hit@2" in [m.metric for m in mixed.metrics]  # gold-only metrics still compared
    (refusal,) = mixed.judge_refusals
    assert refusal.metric == "faithful"
    assert "model 'lexical' vs 'm'" in refusal.differences
    assert any(w.startswith("faithful not compared") and "A 0.333, B" in w for w in mixed.warnings)
    assert "faithful" in [m.metric for m in same.metrics] and not same.judge_refusals
    runner = CliRunner()
    out = runner.invoke(main, ["diff", "a", "b", "--store", str(store_path)])
    assert out.exit_code == 0, out.output
    assert "faithful not compared: the faithfulness judges differ" in out.output
    data = json.loads(
        runner.invoke(main, ["diff", "a", "b", "--store", str(store_path), "--json"]).output
    )
    assert data["judge_refusals"][0]["b"]["model"] == "m"
    assert data["judges"]["a"]["faithfulness"]["identity"]["model"] == "lexical"


def test_gate_fails_a_gated_metric_it_cannot_compare(judge: JudgeClient, file_store: Store) -> None:
    """Issue 17.6: `--max-drop faithful=…` across different judges fails with the reason,
    rather than passing on a delta that measures the judges."""
    a, b = _answered_run(file_store, "a"), _answered_run(file_store, "b")
    judge_run_faithfulness(file_store, a, client=None)
    judge_run_faithfulness(file_store, b, client=judge)
    diff = diff_runs(file_store, a, b)
    result = check_gate(diff, GateRules.parse(["faithful=0.1"]))
    assert not result.passed
    assert "faithful not compared" in result.reasons[0] and "cannot compare" in result.reasons[0]
    # A floor needs only the candidate's own number: it is still checked.
    floor = check_gate(diff, GateRules.parse([], ["faithful=0.0"], tag_max_drop=None))
    assert floor.passed and floor.notes[0].startswith("faithful not compared")


def test_gate_require_calibrated(tmp_path: Path) -> None:
    """Issue 17.6: `--require-calibrated` fails an uncalibrated judge, and a calibrated one
    whose kappa interval's lower bound is under `--min-kappa` (lexical: kappa 0.22)."""
    db = tmp_path / "r.db"
    runner = CliRunner()
    with Store.open(db) as store:
        a, b = _answered_run(store, "a"), _answered_run(store, "b")
        judge_run_faithfulness(store, a, client=None)
        judge_run_faithfulness(store, b, client=None)
    args = ["gate", "--baseline", "a", "--candidate", "b", "--store", str(db)]
    assert runner.invoke(main, args).exit_code == 0
    out = runner.invoke(main, [*args, "--require-calibrated"])
    assert out.exit_code == 1, out.output
    assert "the faithfulness judge lexical (prompt lexical/1) has no calibration" in out.output
    with Store.open(db) as store:
        calibrate(load_calibration_set(example_calibration_path()), client=None, store=store)
        judge_run_faithfulness(store, b, client=None)  # now linked to the calibration
    out = runner.invoke(main, [*args, "--require-calibrated", "--json"])
    assert out.exit_code == 1, out.output
    reason = json.loads(out.output)["gate"]["reasons"][0]
    assert f"lower bound under {DEFAULT_MIN_KAPPA:g}" in reason
    assert runner.invoke(main, [*args, "--require-calibrated", "--min-kappa", "-1"]).exit_code == 0
    with pytest.raises(ConfigError, match="min-kappa"):
        GateRules(min_kappa=2.0)


def test_repeats_majority_stability_and_cache_per_repeat(tmp_path: Path) -> None:
    """Issue 17.4: `--repeats 3` sends each request three times (cached per repeat), the
    verdict is the majority, the question whose repeats disagreed is listed as unstable
    with its expected flips (in `judge`, `show` and the gate's notes), and a second pass
    makes zero requests (counted at the server)."""
    db = tmp_path / "r.db"
    runner = CliRunner()
    with Store.open(db) as store:
        _answered_run(store, "gen")
    with serve_chat("flaky") as server:
        args = ["judge", "faithfulness", "gen", "--store", str(db), "--model", "m"]
        args += ["--base-url", server.base_url, "--repeats", "3", "--seed", "1"]
        out = runner.invoke(main, [*args, "--json"])
        assert out.exit_code == 0, out.output
        first = json.loads(out.output)
        assert len(server.requests) == 3 * 3  # three answers, three repeats each
        assert {r["seed"] for r in server.requests} == {1}
        again = runner.invoke(main, args)
        assert again.exit_code == 0, again.output
        assert len(server.requests) == 9  # every repeat came from the cache
    assert first["stability"]["repeats"] == 3
    assert first["stability"]["unstable"] == ["refund"]
    assert "repeats 3: 1 unstable (repeats disagreed): refund" in again.output
    with Store.open(db) as store:
        verdicts = {
            i: e["verdict"] for (i, _), e in store.judge_verdicts(1, "faithfulness").items()
        }
        config = store.judge_runs(1)["faithfulness"]["config"]
    refund = verdicts["refund"]
    assert refund["stability"]["votes"] == 3 and refund["stability"]["agreement"] == 0.667
    # Two votes of three for the majority: it is also the verdict stored.
    majority = max(refund["stability"]["counts"], key=refund["stability"]["counts"].get)
    assert str(refund["supported"]) == majority
    assert verdicts["ship"]["stability"]["agreement"] == 1.0
    assert (config["repeats"], config["seed"]) == (3, 1)
    assert first["stability"]["expected_flips"] == refund["stability"]["flip_chance"]
    # `show` lists the unstable verdict; the gate flags it (a note, not a failure).
    shown = runner.invoke(main, ["show", "gen", "--store", str(db)])
    assert "1 faithfulness verdict(s) unstable across repeats: refund" in shown.output
    with Store.open(db) as store:
        result = check_gate(diff_runs(store, "gen", "gen"), GateRules())
    assert result.passed
    assert "faithful: 1 faithfulness verdict(s) unstable across repeats: refund" in result.notes


def test_one_more_repeat_flip_rule() -> None:
    """Issue 17.4: a 2-1 majority of `supported` flips on a tie (ties go to unsupported);
    a 2-1 majority of `unsupported` does not; unanimous votes never flip; repeats >= 1."""
    from ragmeter.judge.stability import stability
    from ragmeter.judging.stability import expected_flips, flip_chance

    assert flip_chance(stability([True, True, False])) == pytest.approx(1 / 3)
    assert flip_chance(stability([False, False, True])) == 0.0
    assert flip_chance(stability([True, True, True])) == 0.0
    # Grades 3-2 of five: one more 2 ties 3-3 and the tie goes to the lower grade.
    assert flip_chance(stability([3, 2, 3, 2, 3])) == pytest.approx(2 / 5)
    assert stability([3, 2, 3, 2, 3]).label == 3
    assert expected_flips([stability([True, True, False])] * 3) == 1.0
    with pytest.raises(ConfigError, match="repeats"):
        JudgeClient(model="m", base_url="http://127.0.0.1:1/v1", repeats=0)


def test_a_run_links_only_a_calibration_of_the_same_judge(
    store: Store, judge: JudgeClient, judge_server: ChatState
) -> None:
    """Issue 17.6: a calibration made at another temperature (same model and prompt version)
    does not vouch for the run's judge; one made with the same settings does."""
    items = load_calibration_set(example_calibration_path())
    run_id = _answered_run(store, "gen")
    warm = JudgeClient(model="m", base_url=judge_server.base_url, temperature=0.5)
    calibrate(items, client=warm, store=store)
    cold = judge
    assert judge_run_faithfulness(store, run_id, client=cold).calibration is None
    calibrate(items, client=cold, store=store)
    linked = judge_run_faithfulness(store, run_id, client=cold).calibration
    assert linked is not None and linked["config"]["temperature"] == 0.0
