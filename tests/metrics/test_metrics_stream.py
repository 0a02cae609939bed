"""Streaming TREC metrics agree with pytrec_eval, in bounded memory (issue 9, item 3)."""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from _trec import trec_eval
from ragmeter.cli import _LazyGroup
from ragmeter.cli.metrics import metrics as metrics_command
from ragmeter.errors import RunFileError
from ragmeter.evaluation.trec_metrics import metrics_from_trec
from ragmeter.formats.trec import read_qrels
from ragmeter.metrics import compute_metrics

OURS_TO_TREC = {
    "map": "map",
    "mrr": "recip_rank",
    "ndcg@10": "ndcg_cut_10",
    "ndcg@5": "ndcg_cut_5",
    "recall@20": "recall_20",
    "precision@5": "P_5",
    "rprec": "Rprec",
    "ndcg": "ndcg",
}


def write_case(folder: Path, seed: int, *, style: str = "plain") -> tuple[Path, Path]:
    """Random qrels and run: graded judgments, score ties, repeats, queries not judged."""
    rng = random.Random(seed)
    qrels_lines, run_lines = [], []
    for q in range(40):
        qid = f"q{q}" if q % 7 else f"query-{q}-with-a-long-id"
        docs = [f"d{n}" for n in rng.sample(range(300), rng.randrange(0, 60))]
        if q % 5 == 0:
            docs += [f"doc-{'x' * rng.choice([9, 20, 300])}-{q}"]  # ids over 8 and 256 bytes
        if q % 11 != 3:  # some queries are not judged at all
            for doc in set(rng.sample(docs, min(len(docs), 4)) + [f"d{rng.randrange(300)}"]):
                qrels_lines.append(f"{qid} 0 {doc} {rng.choice([0, 1, 1, 2, 3])}")
        if q % 13 == 5:
            continue  # judged but no ranking: missing
        for rank, doc in enumerate(docs, 1):
            score = rng.choice([1.5, 2.0, 7.25, -3.0]) if rng.random() < 0.3 else rng.random() * 20
            text = rng.choice([f"{score:.6f}", repr(score), f"{score:.3e}"])
            run_lines.append(f"{qid} Q0 {doc} {rank} {text} tag")
    for n in range(3):  # a query only in the run
        run_lines.append(f"ghost Q0 d{n} 1 {rng.random()} tag")
    run_text = "\n".join(run_lines) + "\n"
    if style == "messy":
        run_text = run_text.replace(" Q0 ", "\tQ0  ").replace("\n", "\r\n", 5)
        run_text = run_text.replace("\r\n", "\r\n\n", 2)
    qrels, run = folder / f"qrels{seed}.txt", folder / f"run{seed}.trec"
    qrels.write_text("\n".join(qrels_lines) + "\n")
    if style == "gzip":
        run = run.with_suffix(".trec.gz")
        run.write_bytes(gzip.compress(run_text.encode()))
    else:
        run.write_text(run_text)
    return qrels, run


def pytrec_scores(qrels: Path, run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """pytrec_eval's values and its own parse of the run file (in a fresh process)."""
    judged = read_qrels(qrels)
    opener = gzip.open if run.suffix == ".gz" else open
    with opener(run, "rt") as handle:
        lines = handle.read().splitlines()
    measures = {"map", "recip_rank", "ndcg_cut.5,10", "recall.20", "P.5", "Rprec", "ndcg"}
    return trec_eval(judged, None, measures, run_lines=lines, return_run=True)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("seed", "style", "chunk"),
    [(1, "plain", 1 << 20), (2, "plain", 64), (3, "messy", 300), (4, "gzip", 500), (5, "plain", 7)],
    ids=["one-chunk", "tiny-chunks", "tabs-crlf-blank-lines", "gzip", "chunk-smaller-than-line"],
)
def test_agrees_with_pytrec_eval(tmp_path: Path, seed: int, style: str, chunk: int) -> None:
    """Issue 9: every metric, every question, equal to trec_eval's (via pytrec_eval)."""
    qrels, run = write_case(tmp_path, seed, style=style)
    result = metrics_from_trec(qrels, run, list(OURS_TO_TREC), chunk_bytes=chunk)
    expected, parsed = pytrec_scores(qrels, run)
    judged = read_qrels(qrels)
    assert set(result.per_query["map"]) == set(judged)
    for ours, theirs in OURS_TO_TREC.items():
        for qid, value in result.per_query[ours].items():
            reference = expected[qid][theirs] if qid in expected else 0.0
            assert value == pytest.approx(reference, abs=1e-12), (ours, qid)
    # The same numbers as the in-memory API given pytrec_eval's own parse of the run.
    in_memory = compute_metrics(judged, parsed, list(OURS_TO_TREC))
    assert result.missing == in_memory.missing and result.missing
    for metric in OURS_TO_TREC:
        assert result.per_query[metric] == pytest.approx(in_memory.per_query[metric], abs=1e-12)


def test_document_listed_twice_is_an_error(tmp_path: Path) -> None:
    """Issue 9: as trec_eval and pytrec_eval, a repeated document in a query is refused."""
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d1 3 1.0 t\nq2 Q0 d1 1 1 t\n")
    for chunk in (1 << 20, 20):
        with pytest.raises(RunFileError, match=r"run.trec line 3: query q1: doc d1 appears twice "
                           "in the ranking"):  # fmt: skip
            metrics_from_trec({"q1": {"d2": 1}}, run, ["mrr"], chunk_bytes=chunk)


def test_unsorted_run_file(tmp_path: Path) -> None:
    """Issue 9: a run whose queries are interleaved gives the same scores (slower reader)."""
    qrels, run = write_case(tmp_path, 6)
    lines = run.read_text().splitlines()
    random.Random(0).shuffle(lines)
    shuffled = tmp_path / "shuffled.trec"
    shuffled.write_text("\n".join(lines) + "\n")
    assert metrics_from_trec(qrels, shuffled, ["map", "ndcg@10"], chunk_bytes=256) == (
        metrics_from_trec(qrels, run, ["map", "ndcg@10"])
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 x1 t\n",
            r"run.trec line 2: field \"score\": 'x1' is not a number",
        ),
        (
            "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2\n",
            r"run.trec line 2: expected 6 fields \"qid Q0 docid rank score tag\", got 4",
        ),
        (
            "q1 Q0 d1 1 2.5 t\n\nq1 Q0 d2 2 nan t\n",
            r"run.trec line 3: field \"score\": 'nan' is not a number",
        ),
    ],
    ids=["bad-score", "short-line", "nan"],
)
def test_bad_run_lines_are_located(tmp_path: Path, text: str, message: str) -> None:
    """Issue 9: a malformed run line is a RunFileError naming the file and line."""
    (tmp_path / "run.trec").write_text(text)
    with pytest.raises(RunFileError, match=message):
        metrics_from_trec({"q1": {"d2": 1}}, tmp_path / "run.trec", ["mrr"])


def test_metrics_cli_streams_trec_runs(tmp_path: Path) -> None:
    """Issue 9: `ragmeter metrics` reads TREC runs with the streaming reader (gzip too)."""
    qrels, run = write_case(tmp_path, 8)
    packed = tmp_path / "run.trec.gz"
    packed.write_bytes(gzip.compress(run.read_bytes()))
    cli = _LazyGroup(name="ragmeter", commands={"metrics": metrics_command})
    outputs = []
    for path in (run, packed):
        args = ["metrics", "--qrels", str(qrels), "--run", str(path), "-m", "RR", "-m", "nDCG@10"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    expected = metrics_from_trec(qrels, run, ["mrr", "ndcg@10"]).means
    assert (
        outputs[0]
        == outputs[1]
        == (f"mrr\tall\t{expected['mrr']:.4f}\nndcg@10\tall\t{expected['ndcg@10']:.4f}\n")
    )
    run.write_text("q1 Q0 d3 1\n")
    bad = CliRunner().invoke(cli, ["metrics", "--qrels", str(qrels), "--run", str(run)])
    assert bad.exit_code == 2
    assert bad.stderr == (
        f'Error: run file {run} line 1: expected 6 fields "qid Q0 docid rank score tag", got 4\n'
    )
