"""Issue 16.1: every TREC reader follows trec_eval 10's input rules, identically.

Three readers see each case: the in-memory ``read_run`` (+ ``compute_metrics``), the
streaming ``metrics_from_trec`` on a run whose queries are contiguous, and the same
reader on a run whose queries are interleaved (its plain fallback reader).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragmeter.errors import RunFileError
from ragmeter.evaluation.trec_metrics import is_trec_run, metrics_from_trec
from ragmeter.formats.trec import read_qrels, read_run
from ragmeter.metrics import MetricsResult, compute_metrics

QRELS = {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}}
METRICS = ["mrr", "ndcg@10", "recall@5"]
# q2's lines sit between q1's in the interleaved form, so the fallback reader is used.
BASE = [
    "q1 Q0 d9 1 3.0 STANDARD",
    "q1 Q0 d1 2 2.0 STANDARD",
    "q2 Q0 d3 1 1.5 STANDARD",
    "q1 Q0 d2 3 1.0 STANDARD",
]

Reader = Callable[[Path, Path], MetricsResult]


def in_memory(qrels: Path, run: Path) -> MetricsResult:
    return compute_metrics(read_qrels(qrels), read_run(run), METRICS)


def streaming(qrels: Path, run: Path) -> MetricsResult:
    return metrics_from_trec(qrels, run, METRICS, chunk_bytes=64)


def streaming_big_chunks(qrels: Path, run: Path) -> MetricsResult:
    return metrics_from_trec(qrels, run, METRICS)


READERS = {
    "in-memory": in_memory,
    "streaming": streaming,
    "streaming-1-chunk": streaming_big_chunks,
}


def contiguous(lines: list[str]) -> list[str]:
    """The lines grouped by query (stable), for the streaming reader's fast path."""
    return sorted(lines, key=lambda line: line.split()[0] if line.split() else "")


@pytest.fixture
def qrels_file(tmp_path: Path) -> Path:
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, j in QRELS.items() for d, g in j.items()))
    return path


def expected() -> MetricsResult:
    run = {"q1": {"d9": 3.0, "d1": 2.0, "d2": 1.0}, "q2": {"d3": 1.5}}
    return compute_metrics(QRELS, run, METRICS)


def write_run(tmp_path: Path, lines: list[str], *, interleaved: bool, bom: bool = False) -> Path:
    path = tmp_path / ("interleaved.trec" if interleaved else "run.trec")
    ordered = lines if interleaved else contiguous(lines)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + ("\n".join(ordered) + "\n").encode())
    return path


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
@pytest.mark.parametrize("interleaved", [False, True], ids=["contiguous", "interleaved"])
def test_fields_after_the_run_tag_are_ignored(
    tmp_path: Path, qrels_file: Path, reader: Reader, interleaved: bool
) -> None:
    """Issue 16.1: `301 Q0 FBIS3-27619 99 2.138276 STANDARD more junk` is read as trec_eval
    10 reads it (the extra fields are ignored), not refused with "expected 6 fields"."""
    lines = [line + " more junk" if i % 2 else line for i, line in enumerate(BASE)]
    run = write_run(tmp_path, lines, interleaved=interleaved)
    assert reader(qrels_file, run) == expected()


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
@pytest.mark.parametrize("interleaved", [False, True], ids=["contiguous", "interleaved"])
def test_comment_lines_are_skipped_never_a_query(
    tmp_path: Path, reader: Reader, interleaved: bool
) -> None:
    """Issue 16.1: `#` lines are comments in qrels and runs; a six-token comment is not
    read as a query named `#` (it was, silently)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "# qid iter docid rel\n#q1 0 d9 1\n"
        + "".join(f"{q} 0 {d} {g}\n" for q, j in QRELS.items() for d, g in j.items())
    )
    assert read_qrels(qrels) == QRELS
    comment = "# Q0 d1 1 9.0 STANDARD"
    lines = [comment, *BASE[:2], "#another comment", *BASE[2:]]
    run = tmp_path / "run.trec"
    ordered = lines if interleaved else [comment, *contiguous(BASE), "#another comment"]
    run.write_text("\n".join(ordered) + "\n")
    assert reader(qrels, run) == expected()


def test_fast_path_sees_six_token_comment_lines(tmp_path: Path, qrels_file: Path) -> None:
    """Issue 16.1: a chunk in the streaming reader's fast form (six single-spaced fields on
    every line) that holds a comment line still skips it."""
    run = tmp_path / "run.trec"
    run.write_text("\n".join(["# Q0 d1 1 9.0 x", *contiguous(BASE)]) + "\n")
    assert streaming_big_chunks(qrels_file, run) == expected()
    assert in_memory(qrels_file, run) == expected()


@pytest.mark.parametrize("grade", ["1.0", "1.", "2.000", "+1"])
def test_integral_float_grades_are_accepted(tmp_path: Path, grade: str) -> None:
    """Issue 16.1: trec_eval reads `1.0` as grade 1 (atol); so does read_qrels."""
    path = tmp_path / "qrels.txt"
    path.write_text(f"q1 0 d1 {grade}\nq1 0 d2 0.0\n")
    assert read_qrels(path) == {"q1": {"d1": int(float(grade)), "d2": 0}}


@pytest.mark.parametrize("grade", ["1.5", "nan", "inf", "one"])
def test_fractional_grades_are_refused(tmp_path: Path, grade: str) -> None:
    """Issue 16.1: a grade trec_eval would truncate silently (`1.5` -> 1) is refused."""
    path = tmp_path / "qrels.txt"
    path.write_text(f"q1 0 d1 1\nq1 0 d2 {grade}\n")
    with pytest.raises(RunFileError) as error:
        read_qrels(path)
    assert (
        str(error.value) == f"qrels file {path} line 2: field \"rel\": '{grade}' is not an integer"
    )


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
@pytest.mark.parametrize("interleaved", [False, True], ids=["contiguous", "interleaved"])
@pytest.mark.parametrize("qid", ["q1", "q2", "unjudged"])
def test_repeated_document_is_refused_everywhere(
    tmp_path: Path, qrels_file: Path, reader: Reader, interleaved: bool, qid: str
) -> None:
    """Issue 16.1: a document listed twice for one query is refused by every reader, in
    every query (the contiguous streaming reader accepted it in queries it did not score)."""
    lines = [*BASE, f"{qid} Q0 d7 5 0.5 STANDARD", f"{qid} Q0 d7 6 0.25 STANDARD"]
    run = write_run(tmp_path, lines, interleaved=interleaved)
    number = run.read_text().splitlines().index(f"{qid} Q0 d7 6 0.25 STANDARD") + 1
    with pytest.raises(RunFileError) as error:
        reader(qrels_file, run)
    assert str(error.value) == (
        f"run file {run} line {number}: query {qid}: doc d7 appears twice in the ranking "
        "(trec_eval: duplicate docs)"
    )


def test_bom_is_dropped_from_qrels(tmp_path: Path) -> None:
    """Issue 16.1 (regression): a qrels file saved with a UTF-8 BOM read its first query as
    '\\ufeffq1', so that query silently matched no ranking."""
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"\xef\xbb\xbfq1 0 d1 1\nq2 0 d3 1\n")
    assert list(read_qrels(path)) == ["q1", "q2"]
    beir = tmp_path / "test.tsv"
    beir.write_bytes(b"\xef\xbb\xbfquery-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert read_qrels(beir) == {"q1": {"d1": 1}}


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
@pytest.mark.parametrize("interleaved", [False, True], ids=["contiguous", "interleaved"])
def test_bom_is_dropped_from_runs(
    tmp_path: Path, qrels_file: Path, reader: Reader, interleaved: bool
) -> None:
    """Issue 16.1: a run file starting with a BOM reads as without it, in every reader."""
    run = write_run(tmp_path, BASE, interleaved=interleaved, bom=True)
    assert is_trec_run(run)
    result = reader(qrels_file, run)
    assert result == expected() and not result.missing


def test_bom_before_a_jsonl_run(tmp_path: Path) -> None:
    """Issue 16.1: a JSONL run with a BOM is still recognised as JSONL."""
    run = tmp_path / "run.jsonl"
    run.write_bytes(b'\xef\xbb\xbf{"qid": "q1", "hits": ["d1"]}\n')
    assert not is_trec_run(run)
    assert read_run(run) == {"q1": ["d1"]}


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
@pytest.mark.parametrize("interleaved", [False, True], ids=["contiguous", "interleaved"])
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("q1 Q0 d5 4 1.0", 'expected 6 fields "qid Q0 docid rank score tag", got 5'),
        ("q1 Q0 d5 4 high STANDARD", "field \"score\": 'high' is not a number"),
    ],
    ids=["short", "score"],
)
def test_errors_name_file_line_and_field_in_every_reader(
    tmp_path: Path, qrels_file: Path, reader: Reader, interleaved: bool, bad: str, message: str
) -> None:
    """Issue 16.1: the same bad line gives the same error (file, line, field) everywhere."""
    run = write_run(tmp_path, [*BASE, bad], interleaved=interleaved)
    number = run.read_text().splitlines().index(bad) + 1
    with pytest.raises(RunFileError) as error:
        reader(qrels_file, run)
    assert str(error.value) == f"run file {run} line {number}: {message}"
