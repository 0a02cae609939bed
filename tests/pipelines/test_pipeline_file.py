"""Issue 4: pipeline files: strict keys, resolved config stored with the run, stage latency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli import main
from ragmeter.errors import ConfigError
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.pipelines.builtin import build_retriever
from ragmeter.pipelines.pipeline import PipelineConfig, load_pipeline_file
from ragmeter.store import Store


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"retriver": "bm25"}, "unknown key 'retriver'; allowed: chunker, retriever, dense"),
        ({"retriever": "sparse"}, "retriever must be one of bm25, dense, hybrid"),
        ({"fusion": {"metod": "rrf"}}, "fusion: unknown key 'metod'; allowed: method, k, depth"),
        ({"fusion": {"weights": {"bm": 1}}}, "fusion.weights: unknown key 'bm'; allowed: bm25"),
        ({"dense": {"modle": "x"}}, "dense: unknown key 'modle'; allowed: model, ann_threshold"),
        ({"chunker": {"sise": 5}}, "chunker: unknown key 'sise'"),
        ({"chunker": {"kind": "markdown", "unit": "tokens"}}, "unit 'tokens' needs kind 'fixed'"),
    ],
    ids=["top", "retriever", "fusion", "weights", "dense", "chunker", "unit"],
)
def test_unknown_keys_and_bad_values_name_the_allowed(
    data: dict[str, object], message: str
) -> None:
    """Issue 4: unknown keys are errors naming the allowed ones."""
    with pytest.raises(ConfigError) as info:
        PipelineConfig.from_dict(data)
    assert message in str(info.value)


def test_resolved_config_has_every_section() -> None:
    """Issue 4: the resolved config fills defaults (RRF k=60, depth 100, packaged model)."""
    resolved = PipelineConfig.from_dict({"retriever": "hybrid"}).to_dict()
    assert list(resolved) == ["chunker", "retriever", "dense", "fusion", "rerank", "rewrite"]
    assert resolved["fusion"]["k"] == 60 and resolved["fusion"]["method"] == "rrf"
    assert resolved["dense"]["model"] == "all-MiniLM-L6-v2"
    assert resolved["chunker"]["kind"] == "markdown"


def test_yaml_error_names_file_and_line(tmp_path: Path) -> None:
    """Issue 4: a broken pipeline file names the file and line."""
    f = tmp_path / "p.yaml"
    f.write_text("retriever: bm25\nchunker: [\n")
    with pytest.raises(ConfigError, match=r"p.yaml line \d+: invalid YAML"):
        load_pipeline_file(f)


def test_pipeline_file_through_build_retriever(tmp_path: Path) -> None:
    """Issue 4: `--retriever pipeline.yaml` builds a Pipeline; the file's chunker wins."""
    f = tmp_path / "bm25-small.yaml"
    f.write_text("retriever: bm25\nchunker: {kind: fixed, size: 60, unit: tokens}\n")
    built = build_retriever(str(f), corpus=example_corpus_dir(), cache_dir=tmp_path / "c")
    assert built.pipeline is not None
    assert built.config["chunker"]["unit"] == "tokens"
    assert built.config["pipeline"]["retriever"] == "bm25"
    hits = built.retriever.retrieve("How do I install uv?", 5)
    assert len(hits) == 5 and all(h.text for h in hits)
    summary = built.pipeline.stage_latency_summary()
    assert summary["retrieve"]["n"] == 1 and "bm25" in summary["index_build_ms"]


def test_eval_cli_with_pipeline_file_stores_resolved_config(tmp_path: Path) -> None:
    """Issue 4: `ragmeter eval --retriever p.yaml` runs and stores the resolved pipeline."""
    f = tmp_path / "p.yaml"
    f.write_text("retriever: bm25\nrewrite: {method: rm3}\n")
    db = tmp_path / "r.db"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            str(example_gold_path()),
            "--corpus",
            str(example_corpus_dir()),
            "--retriever",
            str(f),
            "--store",
            str(db),
            "--json",
        ],
        env={"RAGMETER_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_errors"] == 0
    with Store.open(db) as store:
        run = store.get_run("latest")
    assert run.config["pipeline"]["rewrite"]["method"] == "rm3"
    assert run.config["pipeline"]["fusion"]["k"] == 60


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("retriever: bm25\nrerank: {topn: 3}\n", "allowed: top_n, cross_encoder, llm"),
        ("retriever: dense\ndense: {model: /no/such/model}\n", "never downloaded"),
    ],
    ids=["unknown-key", "missing-model"],
)
def test_bad_pipeline_exit_2_and_nothing_stored(tmp_path: Path, content: str, message: str) -> None:
    """Issue 4: a bad pipeline is 'Error: …', exit code 2, and no run in the store."""
    f = tmp_path / "p.yaml"
    f.write_text(content)
    db = tmp_path / "r.db"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            str(example_gold_path()),
            "--corpus",
            str(example_corpus_dir()),
            "--retriever",
            str(f),
            "--store",
            str(db),
        ],
        env={"RAGMETER_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    if db.exists():
        with Store.open(db) as store:
            assert store.list_runs() == []


def test_empty_corpus_and_documents_without_text(tmp_path: Path) -> None:
    """Issue 4: an empty corpus is an error; documents with no text are skipped and counted."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.md").write_text("  \n")
    with pytest.raises(ConfigError.__mro__[1], match="no documents"):
        build_retriever("hybrid", corpus=empty)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha beta")
    (docs / "b.md").write_text("")
    built = build_retriever("bm25", corpus=docs)
    assert any("1 document with no text was skipped" in w for w in built.warnings)
