"""Issue 17.2 in the gate: judge rules decided on the corrected (prediction-powered)
estimate with its interval, and "uncalibrated" said when there are no labels.

Two real runs with generated answers, judged by the lexical judge (faithful = 1/3 on
both); people's labels of a run's answers (the dashboard's ``run-<id>`` set) correct it.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from tests.evaluation.test_generation import answer, search

import ragmeter
from ragmeter.cli import main
from ragmeter.evaluation.judging import judge_run_faithfulness
from ragmeter.gold.goldset import GoldSet
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


def _two_judged_runs(db: Path) -> tuple[list[str], list[str]]:
    """Runs "base" and "cand", same answers, lexical faithful 1/3; (passed, failed) ids."""
    with Store.open(db) as store:
        for name in ("base", "cand"):
            run = ragmeter.evaluate(
                _gold(), search, k=2, store=store, generator=answer, name=name
            ).run
            judge_run_faithfulness(store, run.id, client=None)
        verdicts = store.judge_verdicts(run.id, "faithfulness")
    passed = sorted(i for (i, _), e in verdicts.items() if e["verdict"]["supported"])
    failed = sorted(i for (i, _), e in verdicts.items() if not e["verdict"]["supported"])
    assert (len(passed), len(failed)) == (1, 2)
    return passed, failed


def _gate(db: Path, baseline: str, candidate: str, *rule: str) -> Result:
    args = ["gate", "--baseline", baseline, "--candidate", candidate, "--no-tag-check"]
    return CliRunner().invoke(main, [*args, *rule, "--store", str(db)])


def test_gate_decides_a_judge_drop_on_the_corrected_estimates(tmp_path: Path) -> None:
    """Issue 17.2: the plain judge means are equal (the old gate passed), but people's labels
    say the baseline's answers were better: the corrected drop of 0.5 fails the gate."""
    db = tmp_path / "r.db"
    passed, failed = _two_judged_runs(db)

    plain = _gate(db, "base", "cand", "--max-drop", "faithful=0.1")
    assert plain.exit_code == 0, plain.output
    assert (
        "faithful: baseline 0.333 (uncalibrated: no labels) -> "
        "candidate 0.333 (uncalibrated: no labels)" in plain.output
    )
    assert (
        "faithful: --max-drop decided on the plain judge mean (uncalibrated: the baseline "
        "and the candidate have no labels)" in plain.output
    )

    with Store.open(db) as store:
        # Baseline: people overturn one failed answer (+1/2 correction): 0.833.
        store.save_labels("run-1", {passed[0]: "supported", failed[0]: "supported"})
        # Candidate: people agree with the judge: 0.333.
        store.save_labels("run-2", {passed[0]: "supported", failed[0]: "unsupported"})
    gated = _gate(db, "base", "cand", "--max-drop", "faithful=0.1")
    assert gated.exit_code == 1, gated.output
    assert (
        "✗ faithful (corrected by people's labels) dropped by 0.500 (0.833 -> 0.333), "
        "more than the allowed 0.1" in gated.output
    )
    assert "baseline 0.833 corrected (95% interval" in gated.output
    assert "judge 0.333, 2 labels, 3 judged; clipped to [0, 1]" in gated.output
    assert "candidate 0.333 corrected" in " ".join(gated.output.split())

    data = json.loads(_gate(db, "base", "cand", "--max-drop", "faithful=0.1", "--json").output)
    sides = data["gate"]["judged"]["faithful"]
    assert sides["a"]["estimate"] == 1 / 3 + 1 / 2 and sides["a"]["status"] == "corrected"
    assert sides["b"]["n_labels"] == 2 and data["gate"]["passed"] is False


def test_gate_minimum_on_a_judge_metric_uses_the_corrected_estimate(tmp_path: Path) -> None:
    """Issue 17.2: `--min faithful=0.5` passes a candidate whose corrected faithful is 0.833
    although its judge mean is 0.333; without labels it is decided on 0.333 and says so."""
    db = tmp_path / "r.db"
    passed, failed = _two_judged_runs(db)
    uncalibrated = _gate(db, "cand", "base", "--min", "faithful=0.5")
    assert uncalibrated.exit_code == 1
    assert "faithful is 0.333, below the minimum 0.5" in uncalibrated.output
    assert "--min decided on the plain judge mean (uncalibrated: the candidate has no labels)" in (
        uncalibrated.output
    )
    with Store.open(db) as store:
        store.save_labels("run-1", {passed[0]: "supported", failed[0]: "supported"})
    report = tmp_path / "gate.md"
    corrected = _gate(db, "cand", "base", "--min", "faithful=0.5", "--markdown", str(report))
    assert corrected.exit_code == 0, corrected.output
    assert "candidate 0.833 corrected (95% interval" in corrected.output
    assert "⚖️ faithful: baseline 0.333 (uncalibrated: no labels) -> candidate 0.833 corrected" in (
        report.read_text(encoding="utf-8")
    )
