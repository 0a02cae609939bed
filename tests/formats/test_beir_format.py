"""Issue 2: BEIR folders in and out (corpus.jsonl[.gz], queries.jsonl, qrels/*.tsv)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from _paths import SHARED
from ragmeter.documents import Document
from ragmeter.errors import CorpusError, GoldSetError
from ragmeter.formats.beir import read_beir_corpus, read_beir_qrels, read_beir_queries, write_beir
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet

SCIFACT = SHARED / "data" / "scifact"
needs_scifact = pytest.mark.skipif(
    not (SCIFACT / "qrels" / "test.tsv").is_file(),
    reason=f"shared BEIR data not present at {SCIFACT}",
)


def make_beir(folder: Path, *, qrels: str, gz: bool = False) -> Path:
    (folder / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "One", "text": "First doc.", "metadata": {}},
        {"_id": "d2", "title": "", "text": "Second doc."},
    ]
    body = "".join(json.dumps(d) + "\n" for d in docs).encode("utf-8")
    if gz:
        (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(body))
    else:
        (folder / "corpus.jsonl").write_bytes(body)
    queries = [{"_id": "q1", "text": "first?"}, {"_id": "q2", "text": "second?"}]
    queries.append({"_id": "q3", "text": "never judged?"})
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_bytes(qrels.encode("utf-8"))
    return folder


def test_read_beir_folder_with_crlf_and_gzip(tmp_path: Path) -> None:
    """Issue 2: CRLF qrels with a header and a gzipped corpus read correctly."""
    qrels = "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td2\t2\r\nq2\td1\t0\r\n"
    folder = make_beir(tmp_path / "b", qrels=qrels, gz=True)
    assert read_beir_qrels(folder, "test") == {"q1": {"d1": 1}, "q2": {"d2": 2, "d1": 0}}
    assert read_beir_queries(folder) == {"q1": "first?", "q2": "second?", "q3": "never judged?"}
    docs = list(read_beir_corpus(folder))
    assert docs == [
        Document(id="d1", text="First doc.", title="One", metadata={}),
        Document(id="d2", text="Second doc.", title="", metadata={}),
    ]
    gold = load_gold(folder)
    assert [item.id for item in gold] == ["q1", "q2"]
    assert gold.qrels() == read_beir_qrels(folder, "test")
    everything = load_gold(folder, queries_only_judged=False)
    assert [item.id for item in everything] == ["q1", "q2", "q3"]
    assert everything["q3"].relevant == ()


def test_write_beir_round_trip(tmp_path: Path) -> None:
    """Issue 2: write_beir then load_gold gives the same doc-level judgments and questions."""
    gold = GoldSet.from_records(
        [
            {"id": "a", "question": "A?", "relevant": [{"doc": "d1", "grade": 2}, "d2"]},
            {"id": "b", "question": "B?", "relevant": [{"doc": "d1", "quote": "x", "grade": 3}]},
            {"id": "c", "question": "C?", "relevant": [{"chunk": "d3#4", "grade": 1}]},
        ]
    )
    docs = [Document(id="d1", text="x y", title="T"), Document(id="d2", text="z")]
    write_beir(gold, tmp_path / "out", documents=docs)
    assert (tmp_path / "out" / "qrels" / "test.tsv").read_text().splitlines()[0] == (
        "query-id\tcorpus-id\tscore"
    )
    again = load_gold(tmp_path / "out")
    assert (
        again.qrels() == gold.qrels() == {"a": {"d1": 2, "d2": 1}, "b": {"d1": 3}, "c": {"d3": 1}}
    )
    assert [i.question for i in again] == ["A?", "B?", "C?"]
    assert [d.id for d in read_beir_corpus(tmp_path / "out")] == ["d1", "d2"]


BAD_QRELS = [
    ("two-fields", "query-id\tcorpus-id\tscore\nq1\td1\n", 2, "expected 3 tab-separated fields"),
    ("float-score", "q1\td1\t1.5\n", 1, "score must be an integer, got '1.5'"),
    ("spaces", "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq1 d2 1\r\n", 3, "got 1"),
]


@pytest.mark.parametrize(
    ("qrels", "line", "message"), [b[1:] for b in BAD_QRELS], ids=[b[0] for b in BAD_QRELS]
)
def test_bad_qrels_rows_name_file_and_line(
    tmp_path: Path, qrels: str, line: int, message: str
) -> None:
    """Issue 2: a malformed qrels row is one error naming the file and the line."""
    folder = make_beir(tmp_path / "b", qrels=qrels)
    with pytest.raises(GoldSetError) as caught:
        load_gold(folder)
    text = str(caught.value)
    assert text.startswith(f"qrels {folder / 'qrels' / 'test.tsv'} line {line}: ")
    assert message in text


def test_bad_beir_inputs(tmp_path: Path) -> None:
    """Issue 2: missing split, missing queries, judged-but-unknown query, bad corpus line."""
    folder = make_beir(tmp_path / "b", qrels="q1\td1\t1\nq9\td1\t1\n")
    with pytest.raises(GoldSetError, match=r"file not found \(splits here: test\)"):
        load_gold(folder, split="dev")
    with pytest.raises(GoldSetError, match=r'query "q9" is judged but not in queries.jsonl'):
        load_gold(folder)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": 5}\n')
    with pytest.raises(CorpusError, match=r'corpus .*corpus.jsonl line 2: "text" must be a string'):
        list(read_beir_corpus(folder))
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "d1", "text": "ok"}\n{"_id": "d\xff"}\n')
    with pytest.raises(CorpusError, match=r"line 2: not UTF-8 text"):
        list(read_beir_corpus(folder))
    (folder / "queries.jsonl").unlink()
    with pytest.raises(GoldSetError, match=r"not a BEIR folder: no queries.jsonl"):
        load_gold(folder)


def test_truncated_gzip_corpus_is_a_corpus_error(tmp_path: Path) -> None:
    """Issue 2: a cut-off corpus.jsonl.gz is reported, not a zlib traceback."""
    folder = make_beir(tmp_path / "b", qrels="q1\td1\t1\n", gz=True)
    data = (folder / "corpus.jsonl.gz").read_bytes()
    (folder / "corpus.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorpusError, match=r"cannot read it"):
        list(read_beir_corpus(folder))


@needs_scifact
def test_scifact_test_split_loads() -> None:
    """Issue 2: SciFact (BEIR) gives 300 judged test questions whose qrels match the TSV."""
    gold = load_gold(SCIFACT)
    assert len(gold) == 300
    expected: dict[str, dict[str, int]] = {}
    lines = (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    for row in lines:
        qid, doc, score = row.strip().split("\t")
        expected.setdefault(qid, {})[doc] = int(score)
    assert gold.qrels() == expected
    assert sum(len(d) for d in expected.values()) == 339
    queries = read_beir_queries(SCIFACT)
    assert len(queries) == 1109
    assert all(gold[qid].question == queries[qid] for qid in expected)
    assert gold.only_docs


@needs_scifact
def test_scifact_corpus_streams_every_doc() -> None:
    """Issue 2: the gzipped SciFact corpus reads 5,183 documents and covers every judged doc."""
    docs = {d.id: d for d in read_beir_corpus(SCIFACT)}
    assert len(docs) == 5183
    assert load_gold(SCIFACT).missing_docs(docs.keys()) == {}
