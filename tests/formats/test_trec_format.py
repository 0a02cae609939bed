"""Issue 2 items 2 and "Bad input": TREC qrels/run files, BEIR qrels, JSONL runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.errors import RunFileError
from ragmeter.formats.trec import read_qrels, read_run, write_qrels, write_run
from ragmeter.metrics import compute_metrics


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def test_qrels_trec_with_crlf_and_beir_tsv(tmp_path: Path) -> None:
    """Issue 2: TREC qrels (CRLF tolerated) and BEIR TSV with header read alike."""
    trec = write(tmp_path, "q.txt", "q1 0 d1 2\r\nq1 0 d2 0\r\nq2 0 d3 -1\r\n")
    beir = write(
        tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\r\nq1\td1\t2\nq1\td2\t0\nq2\td3\t-1\n"
    )
    expected = {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": -1}}
    assert read_qrels(trec) == expected
    assert read_qrels(beir) == expected


def test_run_trec_and_jsonl(tmp_path: Path) -> None:
    """Issue 2: TREC runs give scores; JSONL runs give scores or ranked lists."""
    trec = write(tmp_path, "r.trec", "q1 Q0 d1 1 2.5 t\r\nq1 Q0 d2 2 -1e3 t\n\nq2 Q0 d1 1 0 t\n")
    assert read_run(trec) == {"q1": {"d1": 2.5, "d2": -1000.0}, "q2": {"d1": 0.0}}
    scored = write(
        tmp_path,
        "s.jsonl",
        '{"qid": "q1", "hits": [{"id": "a", "score": 2}, '
        '{"doc": "b", "score": 1.5}]}\n{"query_id": "q2", "docs": []}\n',
    )
    assert read_run(scored) == {"q1": {"a": 2.0, "b": 1.5}, "q2": {}}
    listed = write(
        tmp_path, "l.jsonl", '{"id": "q1", "hits": ["b", "a"]}\n{"qid": 7, "hits": [{"id": "c"}]}\n'
    )
    assert read_run(listed) == {"q1": ["b", "a"], "7": ["c"]}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "bad-score",
            "q1 Q0 d1 1 abc t\n",
            "run file {p} line 1: field \"score\": 'abc' is not a number",
        ),
        (
            "nan-score",
            "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 nan t\n",
            "run file {p} line 2: field \"score\": 'nan' is not a number",
        ),
        (
            "fields",
            "q1 Q0 d1 1 2 t\nq1 d2 2 1\n",
            'run file {p} line 2: expected 6 fields "qid Q0 docid rank score tag", got 4',
        ),
        (
            "duplicate",
            "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\nq1 Q0 d1 3 0 t\n",
            "run file {p} line 3: query q1: doc d1 appears twice in the ranking",
        ),
        (
            "json-duplicate",
            '{"qid": "q1", "hits": ["a", "b", "a"]}\n',
            "run file {p} line 1: query q1: doc a appears twice in the ranking",
        ),
        (
            "json-syntax",
            '{"qid": "q1", "hits": []}\n{"qid": \n',
            "run file {p} line 2: is not valid JSON",
        ),
        (
            "json-mixed",
            '{"qid": "q1", "hits": [{"id": "a", "score": 1}, {"id": "b"}]}\n',
            "run file {p} line 1: query q1: some hits in this file have a score",
        ),
        ("json-no-qid", '{"hits": []}\n', 'run file {p} line 1: missing "qid"'),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v and "\n" not in v else "",
)
def test_bad_run_files_name_file_line_and_field(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    """Issue 2 (Bad input): a malformed run file names the file, line and field."""
    path = write(tmp_path, f"{name}.run", content)
    with pytest.raises(RunFileError) as error:
        read_run(path)
    assert str(error.value).startswith(message.format(p=path))


def test_non_utf8_names_file_and_line(tmp_path: Path) -> None:
    """Issue 2 (Bad input): non-UTF-8 bytes are an error naming the file and line."""
    run = write(tmp_path, "r.trec", b"q1 Q0 d1 1 2 t\nq1 Q0 d\xff 2 1 t\n")
    with pytest.raises(RunFileError, match=rf"run file {run} line 2: is not UTF-8"):
        read_run(run)
    qrels = write(tmp_path, "q.txt", b"q1 0 \xe9t\xe9 1\n")
    with pytest.raises(RunFileError, match=rf"qrels file {qrels} line 1: is not UTF-8"):
        read_qrels(qrels)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2 high\n", "line 2: field \"rel\": 'high' is not an integer"),
        ("q1 0 d1 1.5\n", "line 1: field \"rel\": '1.5' is not an integer"),
        ("q1 0 d1\n", "line 1: expected 4 fields"),
        ("q1 0 d1 1\nq1 0 d1 2\n", "line 2: query q1: doc d1 is judged twice"),
    ],
    ids=["word-grade", "float-grade", "too-few-fields", "duplicate"],
)
def test_bad_qrels(tmp_path: Path, content: str, message: str) -> None:
    """Issue 2 (Bad input): a grade that is not an integer etc. names file, line, field."""
    path = write(tmp_path, "q.txt", content)
    with pytest.raises(RunFileError) as error:
        read_qrels(path)
    assert str(error.value).startswith(f"qrels file {path} {message}")


def test_missing_file_is_input_error(tmp_path: Path) -> None:
    """Issue 2 (Bad input): a file that does not exist is a RunFileError, not OSError."""
    with pytest.raises(RunFileError, match="cannot read"):
        read_run(tmp_path / "nope.trec")


IDS = st.text(alphabet="abcdefghXYZ0123456789-_.:é", min_size=1, max_size=6)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    qrels=st.dictionaries(IDS, st.dictionaries(IDS, st.integers(-2, 4), min_size=1), max_size=4),
    run=st.dictionaries(
        IDS,
        st.dictionaries(IDS, st.floats(allow_nan=False, allow_infinity=False, width=64)),
        max_size=4,
    ),
)
def test_round_trip(tmp_path: Path, qrels: dict, run: dict) -> None:  # type: ignore[type-arg]
    """Issue 2: write_qrels/write_run then read gives the same data and the same metrics."""
    write_qrels(qrels, tmp_path / "q.txt")
    write_run(run, tmp_path / "r.trec")
    assert read_qrels(tmp_path / "q.txt") == qrels
    back = read_run(tmp_path / "r.trec")
    assert back == {q: r for q, r in run.items() if r}
    if qrels:
        names = ["ndcg@3", "map", "mrr"]
        assert compute_metrics(qrels, back, names) == compute_metrics(qrels, run, names) or (
            # queries with an empty ranking are absent from a TREC file, so they become
            # missing: same values, different `missing`
            compute_metrics(qrels, back, names).per_query
            == compute_metrics(qrels, run, names).per_query
        )


def test_listed_run_writes_in_rank_order(tmp_path: Path) -> None:
    """Issue 2: a ranked list is written with descending scores and reads back in order."""
    write_run({"q1": ["z", "a", "m", "a"]}, tmp_path / "r.trec", tag="sys")
    assert (tmp_path / "r.trec").read_text() == (
        "q1 Q0 z 1 3 sys\nq1 Q0 a 2 2 sys\nq1 Q0 m 3 1 sys\n"
    )
    back = read_run(tmp_path / "r.trec")
    assert isinstance(back["q1"], dict)
    assert sorted(back["q1"], key=back["q1"].__getitem__, reverse=True) == ["z", "a", "m"]
