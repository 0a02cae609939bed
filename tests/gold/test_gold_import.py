"""Issue 18.1: ``ragmeter gold import --from ragas|deepeval|langsmith|csv|jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ragmeter.cli import main
from ragmeter.corpus import load_corpus
from ragmeter.errors import GoldSetError
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.gold.files import load_gold
from ragmeter.gold.imports import MAX_PROBLEMS, import_gold, stable_id

NOWHERE = "Quantum flux capacitors recalibrate the warp manifold every Tuesday at noon sharp."


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _demo_ragas() -> list[dict[str, Any]]:
    """A RAGAS test set over the demo corpus: its gold quotes, some of them mangled."""
    gold = yaml.safe_load(example_gold_path().read_text(encoding="utf-8"))
    rows = []
    for n, item in enumerate(gold):
        quotes = [r for r in item.get("relevant", []) if "quote" in r]
        contexts = [r["quote"] for r in quotes]
        row: dict[str, Any] = {
            "user_input": item["question"],
            "reference": f"answer {n}",
            "reference_contexts": contexts,
        }
        if n % 2 == 0:  # half name their document, half must be searched for everywhere
            row["reference_context_ids"] = [r["doc"] for r in quotes]
        rows.append(row)
    # Whitespace and case changed: found by the folded match.
    rows[0]["reference_contexts"] = ["  CURL  -LsSf\nhttps://astral.sh/uv/install.sh | SH "]
    rows[0]["reference_context_ids"] = []
    rows.append(
        {"user_input": "Where is it?", "reference": "nowhere", "reference_contexts": [NOWHERE]}
    )
    return rows


def test_ragas_over_the_demo_corpus_locates_or_lists_every_passage(tmp_path: Path) -> None:
    """Issue 18.1: every reference passage becomes a verbatim {doc, quote} or is listed."""
    rows = _demo_ragas()
    # One passage with a word changed: only the fuzzy match finds it, and reports its score.
    docs = load_corpus(example_corpus_dir()).documents
    donor = next(
        r
        for r in rows[1:]
        if r["reference_contexts"] and len(r["reference_contexts"][0].split()) > 10
    )
    original = donor["reference_contexts"][0]
    words = original.split()
    words[len(words) // 2] = "zzzz"
    donor["reference_contexts"][0] = " ".join(words)
    source = tmp_path / "testset.json"
    source.write_text(json.dumps(rows), encoding="utf-8")
    out = tmp_path / "gold.yaml"

    code, stdout, stderr = run(
        "gold", "import", "--from", "ragas", str(source),
        "--corpus", str(example_corpus_dir()), "--out", str(out), "--json",
    )  # fmt: skip

    assert code == 0, stderr
    report = json.loads(stdout)
    total = sum(len(r["reference_contexts"]) for r in rows)
    counts = report["counts"]
    assert counts["items"] == len(rows)
    assert counts["folded"] >= 1 and counts["fuzzy"] == 1 and counts["not_found"] == 1
    assert report["not_found"] == [{"id": stable_id("Where is it?"), "passage": NOWHERE}]
    assert 0.8 <= report["fuzzy"][0]["score"] < 1
    records = yaml.safe_load(out.read_text(encoding="utf-8"))
    written = [r for rec in records for r in rec.get("relevant", [])]
    listed = [p for rec in records for p in rec.get("metadata", {}).get("unlocated_passages", [])]
    assert listed == [NOWHERE]
    # Every passage is accounted for: located (at least one entry each) or listed.
    assert counts["exact"] + counts["folded"] + counts["fuzzy"] + len(listed) >= total
    result = import_gold(source, "ragas", documents=docs)
    accounted = {(e.item_id, e.passage) for e in result.located} | set(result.unlocated)
    assert len(accounted) == total
    for entry in written:  # each quote is a verbatim substring of its document
        assert entry["quote"] in docs[entry["doc"]].text, entry
    assert records[0]["reference_answer"] == "answer 0"
    # The written file is a gold set whose every quote `gold check --corpus` finds.
    code, _, stderr = run("gold", "check", str(out), "--corpus", str(example_corpus_dir()))
    assert code == 0, stderr
    assert load_gold(out).items[0].reference_answer == "answer 0"
    assert records[0]["relevant"][0]["quote"] == "curl -LsSf https://astral.sh/uv/install.sh | sh"


def test_a_csv_missing_a_mapped_column_is_a_clear_error(tmp_path: Path) -> None:
    """Issue 18.1: a --map column absent from the header names itself and the columns there."""
    source = tmp_path / "qs.csv"
    source.write_text("Query,Answer\nHow?,So.\n", encoding="utf-8")
    out = tmp_path / "gold.yaml"
    code, _, stderr = run(
        "gold", "import", "--from", "csv", str(source), "--out", str(out),
        "--map", "question=Query,doc=Source",
    )  # fmt: skip
    assert code == 2
    assert stderr == (
        f"Error: import {source} line 1: no column for --map doc=Source (columns: Query, Answer)\n"
    )
    assert not out.exists()


def test_csv_with_a_mapping_and_list_cells(tmp_path: Path) -> None:
    """Issue 18.1: CSV columns mapped by --map; a list cell (JSON or pandas repr) is a list."""
    source = tmp_path / "qs.csv"
    source.write_text(
        "Query,Source,Ctx,Expected\nHow do I sync?,a.md,\"['Run uv sync.']\",uv sync\n",
        encoding="utf-8",
    )
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("# Sync\n\nRun uv sync.\n", encoding="utf-8")
    out = tmp_path / "gold.yaml"
    code, stdout, stderr = run(
        "gold", "import", "--from", "csv", str(source), "--corpus", str(tmp_path / "corpus"),
        "--out", str(out), "--map", "question=Query,doc=Source,passage=Ctx,answer=Expected",
    )  # fmt: skip
    assert (code, stderr) == (0, "")
    assert stdout == (
        f"wrote 1 items to {out}: passages 1 exact, 0 folded, 0 fuzzy, 0 unverified "
        "(no --corpus), 0 not found\n"
    )
    assert yaml.safe_load(out.read_text(encoding="utf-8")) == [
        {
            "id": stable_id("How do I sync?"),
            "question": "How do I sync?",
            "relevant": [{"doc": "a.md", "quote": "Run uv sync.", "grade": 1}],
            "reference_answer": "uv sync",
        }
    ]


def test_a_passage_found_nowhere_is_listed_not_dropped(tmp_path: Path) -> None:
    """Issue 18.1: the CLI warns about each unfound passage and the item keeps it."""
    source = tmp_path / "t.jsonl"
    source.write_text(
        json.dumps({"user_input": "Q?", "reference_contexts": [NOWHERE]}) + "\n", encoding="utf-8"
    )
    out = tmp_path / "gold.yaml"
    code, stdout, stderr = run(
        "gold", "import", "--from", "ragas", str(source),
        "--corpus", str(example_corpus_dir()), "--out", str(out),
    )  # fmt: skip
    assert code == 0
    assert "1 not found" in stdout
    assert stderr == f"Warning: {stable_id('Q?')}: passage not found: {NOWHERE!r}\n"
    (record,) = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert record["metadata"] == {"unlocated_passages": [NOWHERE]}
    assert "relevant" not in record


def test_every_problem_is_reported_in_one_pass(tmp_path: Path) -> None:
    """Issue 18.1: all bad items are named (file, line, field), up to a limit; nothing written."""
    lines = [
        {"question": "fine"},
        {"text": "no question"},
        {"question": 3.5},
        {"question": "ok", "passage": {"not": "a list"}},
        {"question": "dup", "id": "x"},
        {"question": "dup again", "id": "x"},
    ]
    source = tmp_path / "g.jsonl"
    source.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(GoldSetError) as error:
        import_gold(source, "jsonl")
    assert str(error.value) == (
        "4 problems; nothing written:\n"
        f'import {source} line 2: missing "question"\n'
        f'import {source} line 3: "question" must be a string, got float\n'
        f'import {source} line 4: "passage" must be a string or a list, got dict\n'
        f'import {source} line 6: id "x" repeats line 5'
    )
    many = tmp_path / "many.jsonl"
    many.write_text("{}\n" * (MAX_PROBLEMS + 5), encoding="utf-8")
    with pytest.raises(GoldSetError) as error:
        import_gold(many, "jsonl")
    message = str(error.value)
    assert message.startswith(f"{MAX_PROBLEMS + 5} problems")
    assert message.endswith("... and 5 more problems")
    assert message.count("\n") == MAX_PROBLEMS + 1


def test_repeated_ids_are_a_problem_and_generated_ids_are_stable(tmp_path: Path) -> None:
    """Issue 18.1: a repeated given id is refused; generated ids hash the question."""
    source = tmp_path / "g.jsonl"
    source.write_text(
        '{"question": "a", "id": "x"}\n{"question": "b", "id": "x"}\n', encoding="utf-8"
    )
    with pytest.raises(GoldSetError, match=r'line 2: id "x" repeats line 1'):
        import_gold(source, "jsonl")
    source.write_text('{"question": "Same?"}\n{"question": "same?"}\n', encoding="utf-8")
    ids = [r["id"] for r in import_gold(source, "jsonl").records]
    assert ids == [stable_id("Same?"), stable_id("Same?") + "-2"]
    assert ids == [r["id"] for r in import_gold(source, "jsonl").records]


@pytest.mark.parametrize(
    ("source", "record"),
    [
        (
            "deepeval",
            {"goldens": [{"input": "How do I sync?", "expected_output": "uv sync",
                          "context": ["run uv  SYNC."], "retrieval_context": ["ignored"]}]},
        ),
        (
            "langsmith",
            [{"id": "ex-1", "inputs": {"question": "How do I sync?"},
              "outputs": {"answer": "uv sync", "contexts": [{"page_content": "Run uv sync."}]},
              "metadata": {"tags": ["sync"]}}],
        ),
    ],
    ids=["deepeval-goldens", "langsmith-examples"],
)  # fmt: skip
def test_deepeval_and_langsmith_field_mappings(tmp_path: Path, source: str, record: Any) -> None:
    """Issue 18.1: DeepEval goldens and LangSmith examples map to question/answer/passages."""
    from ragmeter.documents import Document

    path = tmp_path / f"{source}.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    docs = {"a.md": Document(id="a.md", text="# Sync\n\nRun uv sync.\n")}
    result = import_gold(path, source, documents=docs)
    (item,) = result.records
    assert item["question"] == "How do I sync?"
    assert item["reference_answer"] == "uv sync"
    assert item["relevant"] == [{"doc": "a.md", "quote": "Run uv sync.", "grade": 1}]
    assert result.unlocated == []


def test_without_a_corpus_named_passages_are_unverified(tmp_path: Path) -> None:
    """Issue 18.1: no corpus: {doc, quote} from aligned ids is counted unverified; others listed."""
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps([
            {"user_input": "a?", "reference_contexts": ["p1"], "reference_context_ids": ["d1"]},
            {"user_input": "b?", "reference_contexts": ["p2"]},
        ]),
        encoding="utf-8",
    )  # fmt: skip
    result = import_gold(path, "ragas")
    assert result.counts()["unverified"] == 1
    assert result.records[0]["relevant"] == [{"doc": "d1", "quote": "p1", "grade": 1}]
    assert result.unlocated == [(stable_id("b?"), "p2")]


def test_docstring_examples_run() -> None:
    """Issue 18.1: the importer's docstring examples are true."""
    import doctest

    import ragmeter.gold.imports
    import ragmeter.gold.imports.passages
    import ragmeter.gold.imports.sources

    for module in (
        ragmeter.gold.imports,
        ragmeter.gold.imports.passages,
        ragmeter.gold.imports.sources,
    ):
        failures, tried = doctest.testmod(module)
        assert (failures, tried > 0) == (0, True), module.__name__


CORPUS_DOC = "getting-started/installation.md"
QUOTE = "curl -LsSf https://astral.sh/uv/install.sh | sh"


def test_jsonl_is_told_from_json_by_content(tmp_path: Path) -> None:
    """Issue 24.5: JSONL named `.json` (what `export --format ragas` writes wherever it is
    told to) is read line by line; before, it stopped with "not JSON: Extra data"."""
    rows = [
        {"id": "a", "user_input": "How to install?", "reference_contexts": [QUOTE]},
        {"id": "b", "user_input": "Again?", "reference_contexts": [QUOTE]},
    ]
    path = tmp_path / "testset.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = import_gold(path, "ragas", documents=load_corpus(example_corpus_dir()).documents)
    assert [r["id"] for r in result.records] == ["a", "b"]
    assert {"doc": CORPUS_DOC, "quote": QUOTE, "grade": 1} in result.records[0]["relevant"]
    one = tmp_path / "one.json"
    one.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    assert [r["id"] for r in import_gold(one, "ragas").records] == ["a"]


def test_a_csv_given_as_ragas_points_at_from_csv(tmp_path: Path) -> None:
    """Issue 24.5: a RAGAS test set saved as CSV (`testset.to_pandas().to_csv()`) given to
    `--from ragas` says to use `--from csv` with the map of RAGAS's column names, and that
    command reads it."""
    path = tmp_path / "testset.csv"
    path.write_text(
        "user_input,reference_contexts,reference,reference_context_ids\n"
        f"How to install?,\"['{QUOTE}']\",Run the installer.,['{CORPUS_DOC}']\n",
        encoding="utf-8",
    )
    code, _, err = run("gold", "import", "--from", "ragas", str(path), "--out", "x.yaml")
    assert code == 2
    hint = (
        "--from csv --map question=user_input,answer=reference,passage=reference_contexts,"
        "doc=reference_context_ids"
    )
    assert f"this is CSV, not ragas's JSON or JSONL: read it with {hint}" in err
    out = tmp_path / "gold.yaml"
    mapping = hint.split("--map ")[1]
    code, _, err = run(
        "gold", "import", "--from", "csv", str(path), "--map", mapping, "--out", str(out)
    )
    assert code == 0, err
    (item,) = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert item["relevant"] == [{"doc": CORPUS_DOC, "quote": QUOTE, "grade": 1}]
    assert item["reference_answer"] == "Run the installer."


def test_map_accepts_the_names_the_docs_use(tmp_path: Path) -> None:
    """Issue 24.5: `--map reference_answer=…` (the gold format's name, listed in the docs)
    was refused; it maps the answer field, as `quote=` maps the passage."""
    path = tmp_path / "q.csv"
    path.write_text(
        f"Q,Expected,Context,Doc\nHow?,Run it.,{QUOTE},{CORPUS_DOC}\n", encoding="utf-8"
    )
    out = tmp_path / "gold.yaml"
    args = ["--map", "question=Q,reference_answer=Expected,quote=Context,doc=Doc"]
    code, _, err = run("gold", "import", "--from", "csv", str(path), *args, "--out", str(out))
    assert code == 0, err
    (item,) = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert item["reference_answer"] == "Run it."
    assert item["relevant"] == [{"doc": CORPUS_DOC, "quote": QUOTE, "grade": 1}]
    code, _, err = run(
        "gold", "import", "--from", "csv", str(path), "--map", "answr=X", "--out", str(out)
    )
    assert code == 2 and "reference_answer" in err


def test_absolute_context_ids_become_corpus_relative(tmp_path: Path) -> None:
    """Issue 24.5: `reference_context_ids` written as absolute paths under `--corpus` become
    the corpus-relative ids the gold set and every retriever use."""
    absolute = (example_corpus_dir() / CORPUS_DOC).resolve()
    rows = [
        {
            "user_input": "How?",
            "reference_contexts": [QUOTE],
            "reference_context_ids": [str(absolute)],
        },
        {"user_input": "Which doc?", "reference_context_ids": [str(absolute)]},
    ]
    path = tmp_path / "testset.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    out = tmp_path / "gold.yaml"
    corpus = str(example_corpus_dir())
    code, _, err = run(
        "gold", "import", "--from", "ragas", str(path), "--corpus", corpus, "--out", str(out)
    )
    assert code == 0, err
    first, second = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert first["relevant"] == [{"doc": CORPUS_DOC, "quote": QUOTE, "grade": 1}]
    assert second["relevant"] == [{"doc": CORPUS_DOC, "grade": 1}]
    assert err == ""  # no "not in the corpus" warning: the ids were made relative first
