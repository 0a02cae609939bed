"""Issue 18.2: `ragmeter export` writes what `show` reports, in the formats other tools read."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragmeter.cli import main
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.formats.trec import read_qrels

RUNNER = CliRunner()


def _invoke(*args: str) -> Any:
    result = RUNNER.invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo gold set, BM25 over the bundled uv docs, scored at both levels."""
    folder = tmp_path_factory.mktemp("export")
    db = str(folder / "runs.db")
    common = ["--gold", str(example_gold_path()), "--corpus", str(example_corpus_dir())]
    for level in ("doc", "chunk"):
        _invoke(
            "eval",
            *common,
            "--retriever",
            "bm25",
            "-k",
            "10",
            "--level",
            level,
            "--name",
            level,
            "--store",
            db,
        )
    shown = {
        level: json.loads(_invoke("show", level, "--store", db, "--json").output)
        for level in ("doc", "chunk")
    }
    return {"folder": folder, "db": db, "show": shown}


def test_csv_export_equals_show_json_per_question(stored: dict[str, Any]) -> None:
    """Issue 18.2: one CSV row per question, with the per-question metric values `show` has."""
    out = stored["folder"] / "doc.csv"
    _invoke("export", "doc", "--format", "csv", "--out", str(out), "--store", stored["db"])
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    questions = stored["show"]["doc"]["questions"]
    per_query = {q["id"]: q["metrics"] for q in questions}
    assert [r["id"] for r in rows] == [q["id"] for q in questions]
    assert len(rows) == 53
    metric_names = sorted(next(iter(per_query.values())))
    assert "ndcg@10" in metric_names and "recall@10" in metric_names
    for row, shown in zip(rows, questions, strict=True):
        assert row["question"] == shown["question"]
        assert row["hit"] == str(shown["hit"])
        ids = [h["id"] for h in shown["retrieved"]]
        assert (row["retrieved_ids"].split(" | ") if row["retrieved_ids"] else []) == ids
        for name in metric_names:
            assert float(row[name]) == pytest.approx(per_query[shown["id"]][name], abs=1e-12)


def test_jsonl_export_carries_rankings_metrics_and_text(stored: dict[str, Any]) -> None:
    """Issue 18.2: JSONL rows carry the ranking with ids, docs, scores, grades and chunk text."""
    text = _invoke("export", "chunk", "--format", "jsonl", "--store", stored["db"]).output
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 53
    first = rows[0]
    assert set(first) >= {"id", "question", "tags", "metrics", "ranking", "answer", "blame"}
    assert len(first["ranking"]) == 10
    assert [h["rank"] for h in first["ranking"]] == list(range(1, 11))
    # The store keeps the text of the top hits; every kept text is exported.
    assert all(h["text"] for h in first["ranking"][:3]), "the stored chunk text is exported"
    per_query = {q["id"]: q["metrics"] for q in stored["show"]["chunk"]["questions"]}
    for row in rows:
        assert row["metrics"] == pytest.approx(per_query[row["id"]])


def test_trec_export_rescores_to_the_same_metrics(stored: dict[str, Any]) -> None:
    """Issue 18.2: a TREC export of a doc-level run plus its qrels re-scores identically."""
    run_file = stored["folder"] / "doc.trec"
    qrels_file = stored["folder"] / "doc.qrels"
    result = _invoke(
        "export",
        "doc",
        "--format",
        "trec",
        "--out",
        str(run_file),
        "--qrels-out",
        str(qrels_file),
        "--store",
        stored["db"],
    )
    assert "wrote 53 questions" in result.output
    assert len(read_qrels(qrels_file)) == 53
    shown = stored["show"]["doc"]["metrics"]
    names = ["hit@5", "recall@10", "mrr", "ndcg@10", "map"]
    args = ["metrics", "--qrels", str(qrels_file), "--run", str(run_file), "--json"]
    for name in names:
        args += ["-m", name]
    data = json.loads(_invoke(*args).output)
    means = data["means"]
    for name in names:
        assert means[name] == pytest.approx(shown[name], abs=1e-12), name


def test_trec_export_of_a_chunk_level_run_says_it_ranks_documents(stored: dict[str, Any]) -> None:
    """Issue 18.2: exporting a chunk-level run as TREC warns that the file ranks documents."""
    out = stored["folder"] / "chunk.trec"
    result = RUNNER.invoke(
        main, ["export", "chunk", "--format", "trec", "--out", str(out), "--store", stored["db"]]
    )
    assert result.exit_code == 0
    assert "document-level values" in result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    per_question: dict[str, list[str]] = {}
    for line in lines:
        qid, _, doc, _rank, _score, _tag = line.split()
        per_question.setdefault(qid, []).append(doc)
    assert all(len(docs) == len(set(docs)) for docs in per_question.values())


def test_ragas_and_deepeval_exports_have_their_field_names(stored: dict[str, Any]) -> None:
    """Issue 18.2: RAGAS rows and DeepEval test cases, with the retrieved contexts."""
    ragas = _invoke("export", "chunk", "--format", "ragas", "--store", stored["db"]).output
    rows = [json.loads(line) for line in ragas.splitlines()]
    assert len(rows) == 53
    assert all(r["user_input"] and isinstance(r["retrieved_contexts"], list) for r in rows)
    assert sum(bool(r["retrieved_contexts"]) for r in rows) >= 50
    assert any(r.get("reference_contexts") for r in rows), "gold quotes become references"
    deepeval = json.loads(
        _invoke("export", "chunk", "--format", "deepeval", "--store", stored["db"]).output
    )
    assert len(deepeval) == 53
    assert all(case["input"] and isinstance(case["retrieval_context"], list) for case in deepeval)


def test_parquet_export_reads_back(stored: dict[str, Any]) -> None:
    """Issue 18.2: parquet keeps list columns as lists."""
    pq = pytest.importorskip("pyarrow.parquet")
    out = stored["folder"] / "doc.parquet"
    _invoke("export", "doc", "--format", "parquet", "--out", str(out), "--store", stored["db"])
    table = pq.read_table(str(out)).to_pylist()
    assert len(table) == 53
    assert len(table[0]["retrieved_ids"]) == 10
    assert "ndcg@10" in table[0]


def test_parquet_needs_a_file(stored: dict[str, Any]) -> None:
    """Issue 18.2: parquet to standard output is a usage error (exit 2), not a crash."""
    result = RUNNER.invoke(main, ["export", "doc", "--format", "parquet", "--store", stored["db"]])
    assert result.exit_code == 2
    assert "give --out FILE" in result.output


def test_export_of_an_unknown_run_is_an_input_error(tmp_path: Path) -> None:
    """Issue 18.2: a run that does not exist is exit 2 with a message."""
    result = RUNNER.invoke(main, ["export", "nope", "--store", str(tmp_path / "empty.db")])
    assert result.exit_code == 2
    assert "nope" in result.output


def test_to_pandas_has_the_csv_columns(stored: dict[str, Any]) -> None:
    """Issue 18.2: RunReport.to_pandas() gives the CSV export's columns and values."""
    pd = pytest.importorskip("pandas")
    from ragmeter.evaluation.report import build_report
    from ragmeter.store import Store

    with Store.open(stored["db"]) as store:
        frame = build_report(store, "doc").to_pandas()
    assert isinstance(frame, pd.DataFrame)
    out = stored["folder"] / "pandas.csv"
    _invoke("export", "doc", "--format", "csv", "--out", str(out), "--store", stored["db"])
    with out.open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    assert list(frame.columns) == header
    assert len(frame) == 53
    questions = {q["id"]: q for q in stored["show"]["doc"]["questions"]}
    for _, row in frame.iterrows():
        assert row["ndcg@10"] == pytest.approx(questions[row["id"]]["metrics"]["ndcg@10"])


def test_eval_accepts_list_spellings_of_extra_metrics(stored: dict[str, Any]) -> None:
    """Issue 16.3: `eval -m P` expands to trec_eval's default cutoffs instead of failing."""
    db = str(stored["folder"] / "lists.db")
    _invoke(
        "eval",
        "--gold",
        str(example_gold_path()),
        "--corpus",
        str(example_corpus_dir()),
        "--retriever",
        "bm25",
        "--level",
        "doc",
        "-m",
        "P",
        "--store",
        db,
    )
    metrics = json.loads(_invoke("show", "latest", "--store", db, "--json").output)["metrics"]
    assert {"precision@5", "precision@30", "precision@1000"} <= set(metrics)


def _items(path: Path) -> list[dict[str, Any]]:
    """id, question, reference answer, tags and judgments (doc, quote, grade) of a gold set."""
    from ragmeter.gold.files import load_gold

    return [
        {
            "id": item.id,
            "question": item.question,
            "reference_answer": item.reference_answer,
            "tags": list(item.tags),
            "relevant": [(r.doc, r.chunk, r.quote, r.grade) for r in item.relevant],
        }
        for item in load_gold(path)
    ]


@pytest.mark.parametrize("fmt", ["ragas", "deepeval"])
@pytest.mark.parametrize("with_corpus", [True, False], ids=["corpus", "no-corpus"])
def test_export_then_import_gives_the_same_items(
    stored: dict[str, Any], fmt: str, with_corpus: bool
) -> None:
    """Issue 24.5: `export --format ragas|deepeval` of a run over the bundled gold set, then
    `gold import --from` the same tool, gives back every item: ids, questions, tags and each
    judgment (document, quote, grade), including the whole-document ones a RAGAS row has no
    field for. Before, `import` refused the JSONL ("not JSON: Extra data") and 6 of 53 items
    changed their documents."""
    out = stored["folder"] / f"{fmt}-{with_corpus}.json"  # .json although RAGAS writes JSONL
    _invoke("export", "chunk", "--format", fmt, "--out", str(out), "--store", stored["db"])
    gold_out = stored["folder"] / f"{fmt}-{with_corpus}.yaml"
    corpus = ["--corpus", str(example_corpus_dir())] if with_corpus else []
    result = _invoke("gold", "import", "--from", fmt, str(out), *corpus, "--out", str(gold_out))
    assert "wrote 53 items" in result.output
    assert _items(gold_out) == _items(example_gold_path())
    if fmt == "ragas":
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        # RAGAS's own fields agree: one corpus-relative document per reference context.
        assert all(
            len(r.get("reference_context_ids", [])) == len(r.get("reference_contexts", []))
            for r in rows
        )
        assert {d for r in rows for d in r.get("reference_context_ids", [])} <= {
            p.relative_to(example_corpus_dir()).as_posix()
            for p in example_corpus_dir().rglob("*.md")
        }


@pytest.mark.parametrize("command", [["export", "chunk", "--format", "jsonl"], ["show", "chunk"]])
def test_a_closed_pipe_is_not_gate_failed(stored: dict[str, Any], command: list[str]) -> None:
    """Issue 24.6: `ragmeter show … | head` exited 1, the "gate failed" code, when head closed
    the pipe (rich's default); it now exits 141 (128 + SIGPIPE, as a shell reports a command
    stopped by a closed pipe) with no traceback and no "Exception ignored" at exit, whether
    the output went through click or rich."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ragmeter", *command, "--store", stored["db"]],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    err = done.stderr.decode()
    assert done.returncode == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
