"""Issue 2 item 5: ``ragmeter metrics``, trec_eval-style."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli import main

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d9 1\n"
RUN = "q1 Q0 d2 1 3.0 x\nq1 Q0 d1 2 2.0 x\nq2 Q0 d3 1 1.5 x\nq9 Q0 d3 1 1.5 x\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.trec").write_text(RUN)
    return str(tmp_path / "q.txt"), str(tmp_path / "r.trec")


def test_text_output(files: tuple[str, str]) -> None:
    """Issue 2: text output is trec_eval-like with canonical names; missing count on stderr."""
    qrels, run = files
    result = CliRunner().invoke(
        main, ["metrics", "--qrels", qrels, "--run", run, "-m", "nDCG@10", "-m", "RR"]
    )
    assert result.exit_code == 0
    assert result.stdout == "ndcg@10\tall\t0.5436\nmrr\tall\t0.5000\n"
    assert (
        result.stderr == "1 of 3 questions in the qrels have no ranking in the run; they score 0\n"
    )


def test_per_query_text(files: tuple[str, str]) -> None:
    """Issue 2: --per-query adds metric/qid/value lines for every qrels question."""
    qrels, run = files
    result = CliRunner().invoke(
        main, ["metrics", "--qrels", qrels, "--run", run, "-m", "P@1", "--per-query"]
    )
    assert result.exit_code == 0
    assert result.stdout == (
        "precision@1\tq1\t0.0000\nprecision@1\tq2\t1.0000\nprecision@1\tq3\t0.0000\n"
        "precision@1\tall\t0.3333\n"
    )


def test_json_output(files: tuple[str, str]) -> None:
    """Issue 2: --json prints means, per_query (with --per-query) and missing."""
    qrels, run = files
    args = ["metrics", "--qrels", qrels, "--run", run, "-m", "success_1", "-m", "map", "--json"]
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 0
    assert json.loads(plain.stdout) == {"means": {"hit@1": 1 / 3, "map": 0.5}, "missing": ["q3"]}
    detailed = CliRunner().invoke(main, [*args, "--per-query"])
    assert json.loads(detailed.stdout) == {
        "means": {"hit@1": 1 / 3, "map": 0.5},
        "per_query": {
            "hit@1": {"q1": 0.0, "q2": 1.0, "q3": 0.0},
            "map": {"q1": 0.5, "q2": 1.0, "q3": 0.0},
        },
        "missing": ["q3"],
    }


@pytest.mark.parametrize(
    ("which", "content", "expected"),
    [
        (
            "run",
            "q1 Q0 d1 1 abc x\n",
            "Error: run file {path} line 1: field \"score\": 'abc' is not a number\n",
        ),
        (
            "qrels",
            "q1 0 d1 yes\n",
            "Error: qrels file {path} line 1: field \"rel\": 'yes' is not an integer\n",
        ),
        (
            "run",
            "q1 Q0 d1 1 1 x\nq1 Q0 d1 2 0 x\n",
            "Error: run file {path} line 2: query q1: doc d1 appears twice in the ranking "
            "(trec_eval: duplicate docs)\n",
        ),
    ],
    ids=["bad-score", "bad-grade", "duplicate-doc"],
)
def test_bad_files_exit_2_with_one_line(
    files: tuple[str, str], which: str, content: str, expected: str
) -> None:
    """Issue 2 (Bad input): a bad file gives exit 2 and one line naming file, line, field."""
    qrels, run = files
    path = run if which == "run" else qrels
    Path(path).write_text(content)
    result = CliRunner().invoke(main, ["metrics", "--qrels", qrels, "--run", run, "-m", "map"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == expected.format(path=path)


def test_unknown_metric_exit_2(files: tuple[str, str]) -> None:
    """Issue 2: an unknown or non-ranking metric name is a usage error (exit 2)."""
    qrels, run = files
    for name in ["bleu", "answer_ok"]:
        result = CliRunner().invoke(main, ["metrics", "--qrels", qrels, "--run", run, "-m", name])
        assert result.exit_code == 2
        assert result.stderr.startswith("Error: ")
        assert result.stderr.count("\n") == 1


def test_depth_cuts_each_ranking_and_refuses_zero(files: tuple[str, str]) -> None:
    """Issue 16.2 (depth): `-M 1` keeps only each question's top document (trec_eval -M1):
    q1's relevant d1 at rank 2 no longer counts. `-M 0` and depth=0 are refused, exit 2."""
    from ragmeter.errors import InputError
    from ragmeter.metrics import compute_metrics

    qrels, run = files
    result = CliRunner().invoke(
        main, ["metrics", "--qrels", qrels, "--run", run, "-m", "RR", "-m", "num_ret", "-M", "1"]
    )
    assert result.exit_code == 0
    assert result.stdout == "mrr\tall\t0.3333\nnum_ret\tall\t0.6667\n"
    refused = CliRunner().invoke(main, ["metrics", "--qrels", qrels, "--run", run, "-M", "0"])
    assert refused.exit_code == 2 and "-M" in refused.output
    with pytest.raises(InputError, match=r"depth \(trec_eval -M\) must be a positive integer"):
        compute_metrics({"q": {"a": 1}}, {"q": ["a"]}, ["mrr"], depth=0)
