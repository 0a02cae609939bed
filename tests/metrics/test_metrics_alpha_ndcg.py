"""Issue 16.2: alpha-nDCG@k with subtopic qrels (Clarke et al. 2008).

Neither trec_eval nor ranx has it and ir_measures (ndeval) is not installed, so it is
checked against an independent implementation written here from the paper's
definition, on random subtopic qrels (grades -1..3) and runs with ties, empty and
missing rankings, and on a case worked by hand. Ordinary qrels are refused everywhere.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from ragmeter.cli import main
from ragmeter.errors import InputError, MetricNameError, RunFileError
from ragmeter.formats.subtopics import read_subtopic_qrels
from ragmeter.metrics import compute_diversity, compute_metrics, parse_metric

TOLERANCE = 1e-9


def reference_alpha_ndcg(
    ranked: list[str], judged: dict[str, dict[str, int]], alpha: float, k: int
) -> float:
    """The paper's alpha-DCG, with the ideal built greedily (ties: largest doc id, as ndeval)."""

    def relevant(doc: str, subtopic: str) -> bool:
        return judged[subtopic].get(doc, 0) > 0

    def alpha_dcg(order: list[str]) -> float:
        total = 0.0
        for r, doc in enumerate(order[:k], 1):
            gain = 0.0
            for subtopic in judged:
                if relevant(doc, subtopic):
                    seen = sum(1 for above in order[: r - 1] if relevant(above, subtopic))
                    gain += (1 - alpha) ** seen
            total += gain / math.log2(r + 1)
        return total

    pool = sorted({d for docs in judged.values() for d, g in docs.items() if g > 0})
    ideal: list[str] = []
    while pool and len(ideal) < k:
        scored = [(alpha_dcg([*ideal, d]), d) for d in pool]
        best = max(value for value, _ in scored)
        choice = max(d for value, d in scored if value == best)
        ideal.append(choice)
        pool.remove(choice)
    best_dcg = alpha_dcg(ideal)
    return alpha_dcg(ranked) / best_dcg if best_dcg > 0 else 0.0


def random_case(seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(60):
        qid = f"q{q}"
        pool = [f"d{i}" for i in range(int(rng.integers(1, 25)))]
        qrels[qid] = {}
        for subtopic in range(1, int(rng.integers(1, 6)) + 1):
            judged = rng.choice(pool, size=int(rng.integers(1, len(pool) + 1)), replace=False)
            qrels[qid][str(subtopic)] = {
                str(d): int(rng.choice([-1, 0, 0, 1, 1, 2, 3])) for d in judged
            }
        roll = rng.random()
        if roll < 0.1:
            continue
        if roll < 0.15:
            run[qid] = {}
            continue
        docs = pool + [f"u{i}" for i in range(10)]
        retrieved = rng.choice(docs, size=min(int(rng.integers(1, 30)), len(docs)), replace=False)
        if roll < 0.6:
            scores = rng.integers(0, 3, size=len(retrieved)).astype(np.float64)
        else:
            scores = rng.random(len(retrieved))
        run[qid] = {str(d): float(s) for d, s in zip(retrieved, scores, strict=True)}
    return qrels, run


@pytest.mark.parametrize(("seed", "alpha", "k"), [(0, 0.5, 10), (1, 0.5, 5), (2, 0.2, 20)])
def test_alpha_ndcg_agrees_with_the_papers_definition(seed: int, alpha: float, k: int) -> None:
    """Issue 16.2: alpha_ndcg(alpha=a)@k per question at 1e-9 of the definition."""
    qrels, run = random_case(seed)
    name = str(parse_metric(f"alpha_ndcg(alpha={alpha})@{k}"))
    result = compute_diversity(qrels, run, [name])
    for qid, judged in qrels.items():
        ranking = run.get(qid, {})
        ranked = [
            d for d, _ in sorted(ranking.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        ]
        expected = reference_alpha_ndcg(ranked, judged, alpha, k)
        assert abs(result.per_query[name][qid] - expected) <= TOLERANCE, qid
    assert result.missing == sorted(q for q in qrels if q not in run)


def test_alpha_ndcg_by_hand() -> None:
    """Issue 16.2: d1 covers subtopics 1 and 2, d2 covers 1, d3 covers 3; run d2, d1, d3 at
    alpha = 0.5. Gains 1, 0.5 + 1, 1 (d1's subtopic 1 was seen once). The greedy ideal is
    d1 (2), d3 (1), d2 (0.5)."""
    qrels = {"q": {"1": {"d1": 1, "d2": 1}, "2": {"d1": 1, "d4": 0}, "3": {"d3": 2}}}
    result = compute_diversity(qrels, {"q": ["d2", "d1", "d3"]}, ["alpha_ndcg@3", "alpha-nDCG@1"])
    actual = 1 + 1.5 / math.log2(3) + 1 / 2
    ideal = 2 + 1 / math.log2(3) + 0.5 / 2
    assert result.means["alpha_ndcg@3"] == pytest.approx(actual / ideal, abs=1e-12)
    assert result.means["alpha_ndcg@1"] == pytest.approx(1 / 2, abs=1e-12)


def test_ordinary_qrels_are_refused(tmp_path: Path) -> None:
    """Issue 16.2: ordinary qrels give alpha_ndcg no subtopics: a clear error in every
    entry point (dicts, compute_metrics, the reader), never a plain nDCG under its name."""
    with pytest.raises(InputError, match="alpha_ndcg needs subtopic qrels"):
        compute_diversity({"q": {"d1": 1}}, {"q": ["d1"]}, ["alpha_ndcg@10"])
    with pytest.raises(InputError, match="alpha_ndcg@10 needs subtopic qrels"):
        compute_metrics({"q": {"d1": 1}}, {"q": ["d1"]}, ["alpha_ndcg@10"])
    with pytest.raises(MetricNameError, match="ndcg@10 is not a diversity metric"):
        compute_diversity({"q": {"1": {"d1": 1}}}, {"q": ["d1"]}, ["ndcg@10"])
    ordinary = tmp_path / "qrels"
    ordinary.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    with pytest.raises(RunFileError, match="column 2 is 0 on every line: these are ordinary"):
        read_subtopic_qrels(ordinary)
    bad = tmp_path / "bad"
    bad.write_text("q1 1 d1 1\nq1 1 d1 0\n")
    with pytest.raises(RunFileError, match="line 2: query q1 subtopic 1: doc d1 judged twice"):
        read_subtopic_qrels(bad)


def test_cli_reads_subtopic_qrels(tmp_path: Path) -> None:
    """Issue 16.2: `ragmeter metrics --subtopic-qrels` reads the TREC Web track format."""
    qrels = tmp_path / "div.qrels"
    qrels.write_text("\ufeff# diversity\nq 1 d1 1\nq 1 d2 1\nq 2 d1 1\nq 3 d3 2\n")
    run = tmp_path / "run"
    run.write_text("q Q0 d2 1 3.0 t\nq Q0 d1 2 2.0 t\nq Q0 d3 3 1.0 t\n")
    out = CliRunner().invoke(
        main,
        [
            "metrics",
            "--qrels",
            str(qrels),
            "--run",
            str(run),
            "--subtopic-qrels",
            "-m",
            "alpha_ndcg@1",
        ],
    )
    assert out.exit_code == 0, out.output
    assert out.stdout == "alpha_ndcg@1\tall\t0.5000\n"
    plain = CliRunner().invoke(
        main, ["metrics", "--qrels", str(qrels), "--run", str(run), "-m", "alpha_ndcg@1"]
    )
    assert plain.exit_code == 2 and "--subtopic-qrels" in plain.output


def test_alpha_ndcg_agrees_with_trec_ndeval() -> None:
    """Issue 16.2: alpha-nDCG@k equals TREC's ndeval (the Web track's diversity evaluator,
    through pyndeval and ir_measures' ``alpha_nDCG@k``) per question on random subtopic qrels,
    ties in the greedy ideal included (ndeval takes the largest document id first). The run's
    scores are distinct: on tied scores the two order the run apart (see below)."""
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("pyndeval")
    from ir_measures import Qrel, ScoredDoc, alpha_nDCG

    rng = np.random.default_rng(16)
    subtopics: dict[str, dict[str, dict[str, int]]] = {}
    run: dict[str, dict[str, float]] = {}
    qrels, scored = [], []
    for q in range(60):
        qid = str(q + 1)  # ndeval reads numeric topic ids
        docs = [f"d{i:02d}" for i in range(30)]
        subtopics[qid] = {}
        for s in range(1, int(rng.integers(2, 6))):
            relevant = {str(d): 1 for d in rng.choice(docs, int(rng.integers(1, 7)), False)}
            subtopics[qid][str(s)] = relevant
            qrels += [Qrel(qid, d, 1, str(s)) for d in relevant]
        picked = rng.choice(docs, 20, replace=False)
        scores = rng.choice(1000, 20, replace=False) / 1000  # distinct: no run-order ties
        run[qid] = {str(d): float(v) for d, v in zip(picked, scores, strict=True)}
        scored += [ScoredDoc(qid, d, v) for d, v in run[qid].items()]
    for k in (5, 10, 20):
        reference = {
            r.query_id: r.value for r in ir_measures.iter_calc([alpha_nDCG @ k], qrels, scored)
        }
        ours = compute_diversity(subtopics, run, [f"alpha_ndcg@{k}"]).per_query[f"alpha_ndcg@{k}"]
        assert reference.keys() == ours.keys()
        for qid, value in reference.items():
            assert ours[qid] == pytest.approx(value, abs=1e-9), (k, qid)


def test_alpha_ndcg_and_ndeval_order_tied_scores_differently() -> None:
    """Issue 24.7: with tied scores the two disagree, because they order the run apart:
    ndeval (through pyndeval and ir_measures) puts tied documents in doc id ascending order,
    ragmeter (as trec_eval) descending. Given the ranking ndeval reads (ties ascending) as
    a list, ragmeter gives ndeval's value on every question."""
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("pyndeval")
    from ir_measures import Qrel, ScoredDoc, alpha_nDCG

    rng = np.random.default_rng(24)
    differ = 0
    for q in range(30):
        qid = str(q + 1)
        docs = [f"d{i:02d}" for i in range(20)]
        subtopics = {
            str(s): {str(d): 1 for d in rng.choice(docs, 4, replace=False)} for s in (1, 2, 3)
        }
        qrels = [Qrel(qid, d, 1, s) for s, found in subtopics.items() for d in found]
        picked = rng.choice(docs, 12, replace=False)
        scores = rng.integers(0, 3, 12).astype(float)  # many ties
        run = {str(d): float(v) for d, v in zip(picked, scores, strict=True)}
        scored = [ScoredDoc(qid, d, v) for d, v in run.items()]
        (reference,) = ir_measures.iter_calc([alpha_nDCG @ 10], qrels, scored)
        ascending = [d for d, _ in sorted(run.items(), key=lambda kv: (-kv[1], kv[0]))]
        listed = compute_diversity({qid: subtopics}, {qid: ascending}, ["alpha_ndcg@10"])
        assert listed.per_query["alpha_ndcg@10"][qid] == pytest.approx(reference.value, abs=1e-9)
        scored_ours = compute_diversity({qid: subtopics}, {qid: run}, ["alpha_ndcg@10"])
        differ += abs(scored_ours.per_query["alpha_ndcg@10"][qid] - reference.value) > 1e-9
    assert differ > 0  # the tie order is a real difference, not a rounding one
