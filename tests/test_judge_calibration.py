"""Issue 6: calibration maths (kappa, agreement), the lexical judge, blame, labelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.evaluation.judging import calibrate
from ragmeter.examples import example_calibration_path
from ragmeter.judge.blame import blame, count_blame
from ragmeter.judge.calibration import (
    CalibrationItem,
    agreement_report,
    cohen_kappa,
    load_calibration_set,
)
from ragmeter.judge.labelling import label_items
from ragmeter.judge.lexical import lexical_verdict, specifics
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
    """Issue 6: agreement, confusion matrix, disagreements; >15% disagreement is flagged."""
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
    assert not report.flagged
    judge["i0"] = "unsupported"  # 2 in 10 = 20% > 15%
    flagged = agreement_report(human, judge)
    assert flagged.flagged and "tighten the prompt before trusting it at scale" in flagged.verdict
    # Items the judge failed on are listed, not counted.
    partial = agreement_report(human, {k: v for k, v in judge.items() if k != "u2"})
    assert partial.n == 9 and partial.missing == ["u2"]


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


def test_lexical_judge_calibrated_on_the_shipped_set(tmp_path: Path) -> None:
    """Issue 6: the offline judge's agreement and kappa on examples/calibration.yaml.

    Measured 18/28 = 0.643 agreement, kappa 2/9 = 0.222 (people 16 supported / 12 not;
    judge 22 / 6; p_e = (16*22 + 12*6) / 28^2 = 424/784). It catches invented values
    and flags, not swapped or reversed claims — so it is (rightly) flagged.
    """
    items = load_calibration_set(example_calibration_path())
    with Store.open(tmp_path / "cal.db") as store:
        result, batch = calibrate(items, client=None, store=store)
        saved = store.latest_calibration("lexical", "lexical/1")
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


def test_labelling_keeps_labels_on_ctrl_c() -> None:
    """Issue 6: `judge label` saves each label as given; Ctrl-C keeps what was labelled."""
    items = [CalibrationItem(f"i{n}", "q?", ("ctx",), "a") for n in range(4)]
    replies = iter(["y", "maybe", "n", "s"])

    def ask(prompt: str) -> str:
        try:
            return next(replies)
        except StopIteration:
            raise KeyboardInterrupt from None

    shown: list[str] = []
    with Store.memory() as store:
        saved = label_items(items, store=store, set_name="mine", ask=ask, show=shown.append)
        assert saved == 2
        assert store.labels("mine") == {"i0": "supported", "i1": "unsupported"}
        assert any("stopped: 2 label(s) kept" in line for line in shown)
        # People's labels override the file's when calibrating.
        labelled = [CalibrationItem("i0", "q?", ("ctx",), "a 99", label="unsupported")]
        result, _ = calibrate(labelled, store=store, set_name="mine")
        assert result.confusion["supported"]["unsupported"] == 1
