"""Document identity and the id check: never a silent zero (issues 14.2 and 14.3).

Each case from the issue that used to run to the end with exit 0 and all zeros must now
either score correctly or stop with exit 2 and a message naming the fix.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from _project import write_project
from _servers import JsonHandler, serve_handler
from ragmeter.cli import main
from ragmeter.errors import ConfigError, EvaluationError, RetrieverError
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers import as_retriever, coerce_hits
from ragmeter.retrievers.ids import EARLY_CHECK_QUESTIONS, DocIdentity

TOPICS = ["install", "cache", "python", "tools", "lock", "sync", "venv", "build"]
DOCS = {f"guide/{t}.md": f"# {t}\n\nHow to {t} with the {t} command.\n" for t in TOPICS}
GOLD = [
    {"id": t, "question": f"how do I {t}?", "relevant": [{"doc": f"guide/{t}.md"}]} for t in TOPICS
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_project(tmp_path, DOCS, GOLD, monkeypatch)


@pytest.fixture
def gold() -> GoldSet:
    return GoldSet.from_records(GOLD)


def _topic(question: str) -> str:
    return question.removeprefix("how do I ").rstrip("?")


def _ranked(question: str, k: int) -> list[str]:
    """The right document first, then the others: hit@1 = 1 when ids are read right."""
    first = f"guide/{_topic(question)}.md"
    return [first, *sorted(d for d in DOCS if d != first)][:k]


def test_metadata_source_needs_doc_field(gold: GoldSet) -> None:
    """Issue 14.3: hits {id, text, metadata: {source}} used to score all zeros (the chunk id
    became the doc id); now the run stops naming --doc-field, and with
    doc_field="metadata.source" it scores exactly."""

    def search(question: str, k: int) -> list[dict[str, Any]]:
        return [
            {"id": f"chunk-{n}", "text": "…", "metadata": {"source": doc}}
            for n, doc in enumerate(_ranked(question, k))
        ]

    with pytest.raises(ConfigError, match="--doc-field") as caught:
        ragmeter.evaluate(gold, search, k=3)
    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert "'chunk-0', 'chunk-1', 'chunk-2'" in message and "'guide/build.md'" in message
    report = ragmeter.evaluate(gold, as_retriever(search, doc_field="metadata.source"), k=3)
    assert report.metrics["hit@1"] == 1.0 and report.warnings == []


def test_doc_field_missing_names_the_fields() -> None:
    """Issue 14.2: a --doc-field the hit lacks is an error naming the fields it has."""
    with pytest.raises(RetrieverError, match=r"no document id at --doc-field meta\.path.*text"):
        coerce_hits([{"id": "a", "text": "x"}], source="s", identity=DocIdentity(field="meta.path"))


def test_absolute_paths_stop_then_doc_root_maps_them(tmp_path: Path, gold: GoldSet) -> None:
    """Issue 14.2/14.3: absolute paths (what loaders put in metadata) stop the run with the
    --doc-root hint; with doc_root they become corpus-relative ids, said once."""
    root = tmp_path / "docs"

    def search(question: str, k: int) -> list[dict[str, Any]]:
        return [{"doc": str(root / doc)} for doc in _ranked(question, k)]

    with pytest.raises(ConfigError, match=f"pass --doc-root {root} "):
        ragmeter.evaluate(gold, search, k=3)
    report = ragmeter.evaluate(gold, as_retriever(search, doc_root=str(root)), k=3)
    assert report.metrics["hit@1"] == 1.0
    # Issue 24.6: said once as a note, not stored as a warning.
    assert report.warnings == [] and "corpus-relative" in report.notes[0]


def test_early_stop_skips_the_remaining_questions(gold: GoldSet, store: ragmeter.Store) -> None:
    """Issue 14.3: with the corpus known, ids matching nothing stop the run after the first
    questions instead of retrieving all of them; the run is marked failed."""
    calls: Counter[str] = Counter()

    def search(question: str, k: int) -> list[str]:
        calls["n"] += 1
        return [f"{n:032x}" for n in range(k)]

    with pytest.raises(ConfigError, match="over the first 5 questions.*content hashes"):
        setup = RetrieverSetup(search, documents=DOCS)
        ragmeter.evaluate(gold, setup, k=3, concurrency=1, store=store)
    assert calls["n"] == EARLY_CHECK_QUESTIONS
    assert store.list_runs()[-1].status == "failed"


def test_elasticsearch_body_is_read_as_its_hits(gold: GoldSet) -> None:
    """Issue 14.3: an Elasticsearch/OpenSearch body used to give three hits named "total",
    "max_score" and "hits"; hits.hits[] is read with _id/_score/_source."""

    def search(question: str, k: int) -> dict[str, Any]:
        return {
            "took": 3,
            "hits": {
                "total": {"value": k, "relation": "eq"},
                "max_score": 9.0,
                "hits": [
                    {"_id": doc, "_score": 9.0 - n, "_source": {"content": f"text {n}"}}
                    for n, doc in enumerate(_ranked(question, k))
                ],
            },
        }

    report = ragmeter.evaluate(gold, search, k=3)
    assert report.metrics["hit@1"] == 1.0
    hits = coerce_hits(search("how do I lock?", 2), source="es")
    assert [(h.doc, h.score, h.text) for h in hits] == [
        ("guide/lock.md", 9.0, "text 0"),
        ("guide/build.md", 8.0, "text 1"),
    ]
    by_path = coerce_hits(
        {"hits": {"hits": [{"_id": "x1", "_source": {"path": "guide/sync.md"}}]}},
        source="es",
        identity=DocIdentity(field="_source.path"),
    )
    assert (by_path[0].id, by_path[0].doc) == ("x1", "guide/sync.md")


def test_hits_object_without_a_list_is_refused() -> None:
    """Issue 14.3: {"hits": {...}} whose keys are not hits is an error, never three hits."""
    with pytest.raises(RetrieverError, match=r"\"hits\" must be a list.*'total', 'max_score'"):
        coerce_hits({"hits": {"total": 2, "max_score": 1.0}}, source="svc")


def test_dict_instead_of_a_list_stops_with_the_keys(gold: GoldSet) -> None:
    """Issue 14.3: a dict where the list of hits should be is an error on every question,
    so the run stops (exit 3) with the keys it got, instead of scoring zeros."""

    def search(question: str, k: int) -> dict[str, Any]:
        return {"results": _ranked(question, k)}

    with pytest.raises(EvaluationError, match=r"got an object with keys \['results'\]"):
        ragmeter.evaluate(gold, search, k=3)


def test_few_matching_ids_warn_on_the_stored_run(project: Path) -> None:
    """Issue 14.3: fewer than half the retrieved ids in the corpus: the run finishes with a
    warning stored on it and shown by `eval` and `show`."""
    (project / "mostly_wrong.py").write_text(
        "def search(question, k):\n"
        "    topic = question.removeprefix('how do I ').rstrip('?')\n"
        "    return [f'guide/{topic}.md', 'old/a.md', 'old/b.md', 'old/c.md'][:k]\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "eval",
            "--gold",
            "gold.yaml",
            "--corpus",
            "docs",
            "--retriever",
            "mostly_wrong.py:search",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "only 8 of the 11 distinct document ids" not in result.stderr  # 8 of 11 match
    (project / "more_wrong.py").write_text(
        "def search(question, k):\n"
        "    topic = question.removeprefix('how do I ').rstrip('?')\n"
        "    return [f'guide/{topic}.md'] + [f'old/{topic}{n}.md' for n in range(3)]\n",
        encoding="utf-8",
    )
    result = runner.invoke(
        main,
        ["eval", "--gold", "gold.yaml", "--corpus", "docs", "--retriever", "more_wrong.py:search"],
    )
    assert result.exit_code == 0, result.output
    assert "only 8 of the 32 distinct document ids retrieved (25%)" in result.stderr
    shown = runner.invoke(main, ["show", "latest"])
    assert "only 8 of the 32 distinct document ids retrieved (25%)" in shown.stderr
    as_json = json.loads(runner.invoke(main, ["show", "latest", "--json"]).stdout)
    assert any("25%" in warning for warning in as_json["warnings"])


def test_cli_corpus_maps_absolute_paths_and_doc_field(project: Path) -> None:
    """Issue 14.2: with --corpus, absolute paths under it become corpus-relative ids (said
    once); --doc-field picks the field; exit 2 and the hint when neither is given."""
    root = project / "docs"
    (project / "loader_style.py").write_text(
        f"ROOT = {str(root)!r}\n"
        "def search(question, k):\n"
        "    topic = question.removeprefix('how do I ').rstrip('?')\n"
        "    return [{'id': f'uuid-{topic}', 'text': 'x',\n"
        "             'metadata': {'source': f'{ROOT}/guide/{topic}.md'}}]\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    base = ["eval", "--gold", "gold.yaml", "--retriever", "loader_style.py:search", "--json"]
    failed = runner.invoke(main, base)
    assert failed.exit_code == 2
    assert "'uuid-" in failed.output and "--doc-field" in failed.output
    ok = runner.invoke(main, [*base, "--corpus", "docs", "--doc-field", "metadata.source"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    assert data["metrics"]["hit@1"] == 1.0
    assert any("corpus-relative" in n for n in data["notes"]) and data["warnings"] == []
    rooted = runner.invoke(main, [*base, "--doc-root", "docs", "--doc-field", "metadata.source"])
    assert rooted.exit_code == 0, rooted.output
    assert json.loads(rooted.stdout)["metrics"]["hit@1"] == 1.0


def test_run_file_with_absolute_paths_and_doc_root(project: Path) -> None:
    """Issue 14.2: `run:` retrievers take --doc-root too."""
    root = project / "docs"
    lines = [f"{t} Q0 {root}/guide/{t}.md 1 2.0 mine" for t in TOPICS]
    (project / "abs.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    runner = CliRunner()
    base = ["eval", "--gold", "gold.yaml", "--retriever", "run:abs.trec", "--json"]
    assert runner.invoke(main, base).exit_code == 2
    result = runner.invoke(main, [*base, "--doc-root", str(root)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"]["hit@1"] == 1.0


class _EsHandler(JsonHandler):
    def answer(self, path: str, body: Any) -> Any:
        ranked = _ranked(body["question"], body["k"])
        return {
            "hits": {
                "total": {"value": len(ranked)},
                "max_score": 1.0,
                "hits": [
                    {"_id": f"c{n}", "_score": 1.0 / (n + 1), "_source": {"file": doc}}
                    for n, doc in enumerate(ranked)
                ],
            }
        }


@pytest.fixture
def es_url() -> Iterator[str]:
    with serve_handler(_EsHandler) as url:
        yield url


def test_http_elasticsearch_body_with_doc_field(project: Path, es_url: str) -> None:
    """Issue 14.2/14.3: an HTTP service answering with an Elasticsearch body is read through
    hits.hits[]; --doc-field _source.file applies to HTTP retrievers too."""
    runner = CliRunner()
    base = ["eval", "--gold", "gold.yaml", "--retriever", f"{es_url}/search", "--json"]
    assert runner.invoke(main, base).exit_code == 2  # chunk ids c0, c1… match nothing
    result = runner.invoke(main, [*base, "--doc-field", "_source.file"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"]["hit@1"] == 1.0


def test_adapter_options_on_a_builtin_are_refused(project: Path) -> None:
    """Issue 14.2: --doc-field with a built-in retriever would do nothing: exit 2, said."""
    result = CliRunner().invoke(
        main, ["eval", "--gold", "gold.yaml", "--corpus", "docs", "--doc-field", "metadata.x"]
    )
    assert result.exit_code == 2
    assert "--doc-field apply to your own retrievers, not to --retriever bm25" in result.output


def test_gold_style_misses_stop_unless_the_corpus_confirms_them(gold: GoldSet) -> None:
    """Issue 24.2 (was 14.3's "real zeros"): ids that name no gold document stop the run
    (exit 2) with the fix; with the corpus known and every id in it, the misses are real:
    the run scores its zeros with a stored warning."""

    def search(question: str, k: int) -> list[str]:
        return ["other/faq.md", "other/misc.md"]

    with pytest.raises(ConfigError, match="pass --corpus DIR") as caught:
        ragmeter.evaluate(gold, search, k=2)
    assert caught.value.exit_code == 2
    corpus = {**DOCS, "other/faq.md": "faq", "other/misc.md": "misc"}
    report = ragmeter.evaluate(gold, RetrieverSetup(search, documents=corpus), k=2)
    assert report.metrics["hit@2"] == 0.0
    assert report.warnings == [
        "none of the 2 documents retrieved is one the gold set names, although every one is "
        "in the corpus: every ranking metric is 0"
    ]
