"""Issue 6: calibration maths (kappa, agreement), the lexical judge, blame, labelling.

Issue 17.2/17.3: intervals, the flag decided on them, corrected faithfulness, suggestions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ragmeter.errors import InputError
from ragmeter.evaluation.blame import blame, count_blame
from ragmeter.examples import example_calibration_path
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge.lexical import lexical_verdict, specifics
from ragmeter.judging.calibration import (
    CalibrationItem,
    agreement_report,
    cohen_kappa,
    load_calibration_set,
)
from ragmeter.judging.judge_runs import calibrate
from ragmeter.judging.labelling import label_items
from ragmeter.metrics.uncertainty import wilson_interval
from ragmeter.store import Store

sklearn_metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test dependency")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # p_o = 3/4; p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2; kappa = (3/4 - 1/2) / (1/2) = 1/2
        (["y", "y", "n", "n"], ["y", "n", "n", "n"], 0.5),
        # perfect agreement with both labels used
        (["y", "n", "y"], ["y", "n", "y"], 1.0),
        # p_o = 0; p_e = 1/2 -> kappa = -1
        (["y", "n"], ["n", "y"], -1.0),
        # p_o = 0.5; p_e = (3/4)(1/4) + (1/4)(3/4) = 3/8; kappa = (1/8) / (5/8) = 0.2
        (["y", "y", "y", "n"], ["y", "n", "n", "n"], 0.2),
    ],
    ids=["half", "perfect", "opposite", "fifth"],
)
def test_kappa_by_hand(a: list[str], b: list[str], expected: float) -> None:
    """Issue 6: kappa on cases computed by hand."""
    assert cohen_kappa(a, b) == pytest.approx(expected)


def test_kappa_matches_sklearn() -> None:
    """Issue 6: kappa agrees with sklearn.metrics.cohen_kappa_score on many label pairs."""
    import random

    rng = random.Random(6)
    for _ in range(200):
        n = rng.randint(2, 40)
        a = [rng.choice(["supported", "unsupported"]) for _ in range(n)]
        b = [x if rng.random() < 0.7 else rng.choice(["supported", "unsupported"]) for x in a]
        ours = cohen_kappa(a, b)
        if ours is None:  # both raters used one label: sklearn's kappa is 0/0 there
            assert len(set(a) | set(b)) == 1
            continue
        assert ours == pytest.approx(sklearn_metrics.cohen_kappa_score(a, b), abs=1e-12)


def test_agreement_report_confusion_and_flag() -> None:
    """Issue 6: agreement, confusion matrix, disagreements, missing items.

    Issue 17.3: 9/10 agreement is no longer "fine": its interval (60%-98%) straddles 85%.
    """
    human = {f"i{n}": "supported" for n in range(8)} | {"u1": "unsupported", "u2": "unsupported"}
    judge = dict(human) | {"u1": "supported"}  # one miss in 10 -> 10% disagreement
    report = agreement_report(human, judge, reasons={"u1": "looked fine"})
    assert report.agreement == pytest.approx(0.9)
    assert report.confusion == {
        "supported": {"supported": 8, "unsupported": 0},
        "unsupported": {"supported": 1, "unsupported": 1},
    }
    assert [(d.id, d.human, d.judge, d.reason) for d in report.disagreements] == [
        ("u1", "unsupported", "supported", "looked fine")
    ]
    assert report.flagged and report.status == "too_few_labels"
    assert "too few labels to tell; about 141 labels in all (131 more)" in report.verdict
    # Items the judge failed on are listed, not counted.
    partial = agreement_report(human, {k: v for k, v in judge.items() if k != "u2"})
    assert partial.n == 9 and partial.missing == ["u2"]


def _rated(agree: int, total: int) -> tuple[dict[str, str], dict[str, str]]:
    """``total`` items, half of each label by people; the judge misses the last ones."""
    human = {f"i{n}": "supported" if n % 2 else "unsupported" for n in range(total)}
    flip = {"supported": "unsupported", "unsupported": "supported"}
    judge = {i: (h if n < agree else flip[h]) for n, (i, h) in enumerate(human.items())}
    return human, judge


@pytest.mark.parametrize(
    ("agree", "total", "status"),
    [
        (190, 200, "trusted"),  # 95%: interval 91%-97%, lower bound over 85%
        (20, 20, "too_few_labels"),  # 100%: interval 84%-100% straddles, 16 points wide
        (17, 20, "too_few_labels"),  # 85%: interval 64%-95%
        (6, 10, "flagged"),  # 60%: interval 31%-83%, all of it under 85%
        (860, 1000, "flagged"),  # 86%: interval 84%-88% straddles but is 4 points wide
        (18, 28, "flagged"),  # the lexical judge: 46%-79%
    ],
    ids=["trusted", "perfect-on-20", "85pct-on-20", "clearly-under", "narrow-straddle", "lexical"],
)
def test_flag_is_decided_on_the_agreement_interval(agree: int, total: int, status: str) -> None:
    """Issue 17.3: trusted only when the Wilson lower bound reaches 85%; a straddling
    interval wider than 10 points says "too few labels to tell"; otherwise flagged."""
    report = agreement_report(*_rated(agree, total))
    assert report.status == status
    assert report.flagged is (status != "trusted")
    message = {
        "trusted": "at or above the 85% floor",
        "too_few_labels": "too few labels to tell",
        "flagged": "tighten the prompt before trusting it at scale",
    }[status]
    assert message in report.verdict
    assert report.to_dict()["status"] == status


def test_calibration_reports_intervals_and_precision_recall_per_label() -> None:
    """Issue 17.3: agreement and kappa intervals, per-label precision/recall by hand."""
    human = {"a": "supported", "b": "supported", "c": "supported", "d": "unsupported"}
    human |= {"e": "unsupported", "f": "unsupported"}
    judge = dict(human) | {"c": "unsupported", "e": "supported"}
    report = agreement_report(human, judge)
    # judge said supported to a, b, e (2 right); people said supported to a, b, c.
    assert report.per_label == {
        "supported": {"precision": 2 / 3, "recall": 2 / 3, "support": 3},
        "unsupported": {"precision": 2 / 3, "recall": 2 / 3, "support": 3},
    }
    assert report.agreement_interval == pytest.approx(wilson_interval(4, 6))
    assert report.kappa == pytest.approx(1 / 3)
    assert report.kappa_interval is not None
    assert report.kappa_interval[0] < 1 / 3 < report.kappa_interval[1]
    assert report.kappa_interval == agreement_report(human, judge).kappa_interval  # seeded
    never = agreement_report({"a": "supported"}, {"a": "supported"})
    assert never.per_label["unsupported"] == {"precision": None, "recall": None, "support": 0}
    assert never.kappa is None and never.kappa_interval is None
    data = report.to_dict()
    assert data["agreement_interval"] == pytest.approx(list(wilson_interval(4, 6)))
    assert data["per_label"]["supported"]["support"] == 3 and data["confidence"] == 0.95


def test_corrected_faithfulness_and_suggestions_from_unlabelled_items() -> None:
    """Issue 17.2 and 17.3: verdicts on unlabelled items feed the prediction-powered
    faithfulness; suggestions rank them by the chance people disagree with the verdict."""
    human = {"a": "supported", "b": "unsupported", "c": "supported", "d": "unsupported"}
    judge = {"a": "supported", "b": "supported", "c": "supported", "d": "unsupported"}
    judge |= {"x": "supported", "y": "unsupported", "z": "supported"}
    report = agreement_report(human, judge)
    assert report.n == 4 and sorted(report.unlabelled) == ["x", "y", "z"]
    faithful = report.faithful
    assert faithful is not None
    # judge mean over 7 items = 5/7; people minus judge on a-d: 0, -1, 0, 0
    assert faithful.judge_mean == pytest.approx(5 / 7)
    assert faithful.estimate == pytest.approx(5 / 7 - 1 / 4)
    assert (faithful.n_labels, faithful.n_total) == (4, 7)
    # "supported": 3 labelled, 1 disagreement -> (1 + 1) / (3 + 2) = 0.4;
    # "unsupported": 1 labelled, none -> (0 + 1) / (1 + 2) = 1/3.
    picked = [(s.id, s.judge, s.disagreement) for s in report.suggest(3)]
    assert picked == [("x", "supported", 0.4), ("z", "supported", 0.4), ("y", "unsupported", 1 / 3)]
    assert [s.id for s in report.suggest(1)] == ["x"]
    with pytest.raises(ValueError, match="at least 0"):
        report.suggest(-1)
    bare = agreement_report({}, {})
    assert bare.status == "uncalibrated" and bare.faithful is None and bare.suggest(5) == []


def test_calibrate_judges_unlabelled_items_and_suggests_them(tmp_path: Path) -> None:
    """Issue 17.3: `judge calibrate --suggest N` lists unlabelled items, most
    disagreement-prone first; the JSON carries intervals, per-label figures, the
    corrected faithfulness and the suggestions."""
    from click.testing import CliRunner

    from ragmeter.cli.judge import judge as judge_group

    records = yaml.safe_load(example_calibration_path().read_text(encoding="utf-8"))
    for record in records[20:]:
        del record["label"]
    partial = tmp_path / "partial.yaml"
    partial.write_text(yaml.safe_dump(records), encoding="utf-8")
    db = str(tmp_path / "cal.db")
    runner = CliRunner()
    args = ["calibrate", str(partial), "--judge", "lexical", "--store", db, "--suggest", "3"]
    out = runner.invoke(judge_group, args)
    assert out.exit_code == 0, out.output
    assert "items judged: 20" in out.output
    assert "95% intervals: agreement" in out.output and "(Wilson)" in out.output
    assert "faithful on this set:" in out.output and "20 labels, 28 judged" in out.output
    assert "label next" in out.output
    data = json.loads(runner.invoke(judge_group, [*args, "--json"]).output)
    assert data["n"] == 20 and len(data["agreement_interval"]) == 2
    assert data["faithful"]["n_labels"] == 20 and data["faithful"]["n_total"] == 28
    assert set(data["per_label"]) == {"supported", "unsupported"}
    suggested = [s["id"] for s in data["suggestions"]]
    unlabelled = [r["id"] for r in records[20:]]
    assert len(suggested) == 3 and set(suggested) <= set(unlabelled)
    rates = [s["disagreement"] for s in data["suggestions"]]
    assert rates == sorted(rates, reverse=True)


def test_calibration_set_is_valid_and_balanced() -> None:
    """Issue 6: the shipped set has >= 20 labelled answers, both labels present."""
    items = load_calibration_set(example_calibration_path())
    labels = [item.label for item in items]
    assert len(items) >= 20
    assert labels.count("unsupported") >= 5 and labels.count("supported") >= 5


def test_calibration_set_errors_name_file_item_and_field(tmp_path: Path) -> None:
    """Issue 6: a bad calibration file is rejected with file, item and field."""
    bad = tmp_path / "cal.yaml"
    bad.write_text("- id: a\n  question: q\n  context: [c]\n  answer: x\n  label: maybe\n")
    with pytest.raises(InputError, match=r"cal.yaml item a: \"label\" must be one of"):
        load_calibration_set(bad)


def test_lexical_judge_calibrated_on_the_shipped_set(file_store: Store) -> None:
    """Issue 6: the offline judge's agreement and kappa on examples/calibration.yaml.

    Measured 18/28 = 0.643 agreement, kappa 2/9 = 0.222 (people 16 supported / 12 not;
    judge 22 / 6; p_e = (16*22 + 12*6) / 28^2 = 424/784). It catches invented values
    and flags, not swapped or reversed claims — so it is (rightly) flagged.
    """
    items = load_calibration_set(example_calibration_path())
    result, batch = calibrate(items, client=None, store=file_store)
    saved = file_store.latest_calibration("lexical", "lexical/1")
    assert result.n == len(items) and not result.missing
    assert result.agreement == pytest.approx(18 / 28)
    assert result.kappa == pytest.approx(2 / 9)
    human = [item.label for item in items]
    judged = ["supported" if batch.verdicts[i.id].supported else "unsupported" for i in items]
    assert result.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(human, judged))
    assert result.flagged
    assert saved is not None and saved["agreement"] == pytest.approx(result.agreement)


def test_lexical_specifics_and_verdicts() -> None:
    """Issue 6: numbers, dates, flags, constants and names absent from the context are flagged."""
    assert specifics("Use `uv sync --frozen` on 2024-05-01 with UV_CACHE_DIR set.") == [
        "uv sync --frozen",
        "2024-05-01",
        "UV_CACHE_DIR",
    ]
    context = ["Run `uv lock --check` in CI. It takes 30 seconds."]
    assert lexical_verdict("Run `uv lock --check`. It takes 30 seconds.", context).supported
    verdict = lexical_verdict("It takes 30 seconds. Then pass --offline to Docker.", context)
    assert not verdict.supported
    assert verdict.unsupported_claims == ("Then pass --offline to Docker.",)
    assert "--offline" in verdict.reason and "Docker" in verdict.reason
    assert not lexical_verdict("It takes 300 seconds.", context).supported


def test_blame_rules() -> None:
    """Issue 6: failed + no relevant context -> retrieval; failed + relevant -> generation."""
    assert blame(answer_ok=False, faithful=None, relevant_in_context=False) == "retrieval"
    assert blame(answer_ok=False, faithful=True, relevant_in_context=True) == "generation"
    assert blame(answer_ok=True, faithful=False, relevant_in_context=False) == "retrieval"
    assert blame(answer_ok=True, faithful=True, relevant_in_context=False) == "ok"
    assert blame(answer_ok=None, faithful=None, relevant_in_context=True) is None
    assert count_blame(["ok", "generation", None]) == {"retrieval": 0, "generation": 1, "ok": 1}


def test_labelling_keeps_labels_on_ctrl_c(store: Store) -> None:
    """Issue 6: `judge label` saves each label as given; Ctrl-C keeps what was labelled."""
    items = [CalibrationItem(f"i{n}", "q?", ("ctx",), "a") for n in range(4)]
    replies = iter(["y", "maybe", "n", "s"])

    def ask(prompt: str) -> str:
        try:
            return next(replies)
        except StopIteration:
            raise KeyboardInterrupt from None

    shown: list[str] = []
    saved = label_items(items, store=store, set_name="mine", ask=ask, show=shown.append)
    assert saved == 2
    assert store.labels("mine") == {"i0": "supported", "i1": "unsupported"}
    assert any("stopped: 2 label(s) kept" in line for line in shown)
    # People's labels override the file's when calibrating.
    labelled = [CalibrationItem("i0", "q?", ("ctx",), "a 99", label="unsupported")]
    result, _ = calibrate(labelled, store=store, set_name="mine")
    assert result.confusion["supported"]["unsupported"] == 1


def _answered_gold() -> GoldSet:
    """The three questions `tests.evaluation.test_generation.search` and `answer` are written for."""
    rows = [
        ("refund", "How long do refunds take?", "refunds.md"),
        ("ship", "How fast do orders ship?", "shipping.md"),
        ("contact", "How do I contact support?", "faq.md"),
    ]
    return GoldSet.from_records(
        [{"id": i, "question": q, "relevant": [{"doc": d}]} for i, q, d in rows]
    )


def test_show_and_diff_correct_a_runs_faithful_with_its_answer_labels(tmp_path: Path) -> None:
    """Issue 17.2: `show` and `diff` print a run's `faithful` corrected by people's labels of its
    answers (the dashboard's `run-<id>` set), and "uncalibrated" without labels."""
    from click.testing import CliRunner
    from tests.evaluation.test_generation import answer, search

    import ragmeter
    from ragmeter.cli import main
    from ragmeter.judging.corrected import corrected_faithful
    from ragmeter.judging.judge_runs import judge_run_faithfulness

    db = tmp_path / "r.db"
    with Store.open(db) as store:
        run = ragmeter.evaluate(
            _answered_gold(), search, k=2, store=store, generator=answer, name="gen"
        ).run
        assert corrected_faithful(store, run.id, label_set=f"run-{run.id}") is None  # not judged
        judge_run_faithfulness(store, run.id, client=None)
        verdicts = {
            i: e["verdict"]["supported"]
            for (i, _), e in store.judge_verdicts(run.id, "faithfulness").items()
        }
    passed = [i for i, ok in verdicts.items() if ok]
    failed = [i for i, ok in verdicts.items() if not ok]
    assert (len(passed), len(failed)) == (1, 2)  # the lexical judge: faithful = 1/3
    runner = CliRunner()
    out = runner.invoke(main, ["show", "gen", "--store", str(db)])
    assert out.exit_code == 0, out.output
    assert "faithful 0.333 (uncalibrated: no labels)" in out.output
    with Store.open(db) as store:
        # People agree on the passed answer and overturn one failed answer: h - j = 0, +1.
        store.save_labels(f"run-{run.id}", {passed[0]: "supported", failed[0]: "supported"})
    out = runner.invoke(main, ["show", "gen", "--store", str(db)])
    assert out.exit_code == 0, out.output
    assert "faithful 0.833 corrected (95% interval" in out.output
    assert "judge 0.333, 2 labels, 3 judged" in out.output
    data = json.loads(runner.invoke(main, ["show", "gen", "--store", str(db), "--json"]).output)
    corrected = data["faithful_corrected"]
    assert corrected["estimate"] == pytest.approx(1 / 3 + 1 / 2)
    assert (corrected["n_labels"], corrected["n_total"], corrected["status"]) == (2, 3, "corrected")
    # `diff` shows each run's corrected (or uncalibrated) faithful, run by run.
    with Store.open(db) as store:
        second = ragmeter.evaluate(
            _answered_gold(), search, k=2, store=store, generator=answer, name="gen2"
        ).run
        judge_run_faithfulness(store, second.id, client=None)
    out = runner.invoke(main, ["diff", "gen", "gen2", "--store", str(db)])
    assert out.exit_code == 0, out.output
    assert "A faithful 0.833 corrected (95% interval" in out.output
    assert "B faithful 0.333 (uncalibrated: no labels)" in out.output
    data = json.loads(
        runner.invoke(main, ["diff", "gen", "gen2", "--store", str(db), "--json"]).output
    )
    assert data["faithful_corrected"]["b"]["status"] == "uncalibrated"
    assert data["faithful_corrected"]["a"]["n_labels"] == 2


def test_calibration_and_judged_docstring_examples_hold() -> None:
    """Issue 17: the examples in ragmeter.judging.calibration and ragmeter.judging.corrected hold."""
    import doctest

    import ragmeter.judging.calibration
    import ragmeter.judging.corrected

    for module in (ragmeter.judging.calibration, ragmeter.judging.corrected):
        failures, tried = doctest.testmod(module)
        assert tried > 0 and failures == 0, module.__name__
