"""Issue 4: sweeps: every grid combination is a stored run; winners overall and per tag."""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from _cache import persistent_cache
from ragmeter.cli.sweep import sweep
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.sweep import expand_grid, run_sweep
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.gold.files import load_gold
from ragmeter.store import Store


def test_expand_grid_sets_dotted_keys() -> None:
    """Issue 4: dotted grid keys land in their sections over the base."""
    combos = expand_grid({"chunker": {"kind": "paragraph"}}, {"chunker.size": [300, 600]})
    assert [d for _, d in combos] == [
        {"chunker": {"kind": "paragraph", "size": 300}},
        {"chunker": {"kind": "paragraph", "size": 600}},
    ]


def test_sweep_three_chunk_sizes_bm25(tmp_path: Path, store: Store) -> None:
    """Issue 4: 3 chunk sizes -> 3 stored runs with the diff as note, sorted, tag winners."""
    job = EvalJob(gold=str(example_gold_path()), corpus=str(example_corpus_dir()), concurrency=4)
    result = run_sweep(
        job,
        {"retriever": "bm25"},
        {"chunker.size": [300, 600, 1200]},
        store=store,
        metric="hit@5",
        cache_dir=tmp_path,
    )
    runs = store.list_runs()
    assert len(runs) == 3 and sorted(r.note for r in runs) == [
        "chunker.size=1200",
        "chunker.size=300",
        "chunker.size=600",
    ]
    values = [row.metrics["hit@5"] for row in result.rows]
    assert values == sorted(values, reverse=True)
    stored = store.get_run(result.rows[0].run_id)
    assert stored.config["pipeline"]["retriever"] == "bm25"
    assert "retrieve" in stored.config["stage_latency"]
    assert result.by_tag and all(t.margin >= 0 for t in result.by_tag)


def test_sweep_bad_combination_writes_nothing(tmp_path: Path) -> None:
    """Issue 4: a bad value anywhere in the grid stops the sweep before any run is stored."""
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  chunker.size: [300, 5]\n")
    db = tmp_path / "r.db"
    result = CliRunner().invoke(
        sweep,
        [
            str(grid),
            "--gold",
            str(example_gold_path()),
            "--corpus",
            str(example_corpus_dir()),
            "--store",
            str(db),
        ],
        env={"RAGMETER_CACHE_DIR": str(tmp_path / "c")},
        standalone_mode=False,
    )
    assert result.exception is not None and "size must be an integer >= 20" in str(result.exception)
    if db.exists():
        with Store.open(db) as store:
            assert store.list_runs() == []
    grid.write_text("grids: {}\n")
    bad = CliRunner().invoke(
        sweep,
        [
            str(grid),
            "--gold",
            str(example_gold_path()),
            "--corpus",
            str(example_corpus_dir()),
            "--store",
            str(db),
        ],
        standalone_mode=False,
    )
    assert "allowed: base, grid" in str(bad.exception)


def _gold_documents(folder: Path) -> Path:
    """The demo corpus cut to the documents its gold set names, in ``folder``: every question
    keeps its documents, and the hybrid sweep embeds half the text (27 of 81 files, issue 29.5)."""
    source = example_corpus_dir()
    for doc in {rel.doc for item in load_gold(example_gold_path()) for rel in item.relevant}:
        if doc is not None:
            (folder / doc).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / doc, folder / doc)
    return folder


@pytest.mark.slow
def test_sweep_chunk_sizes_by_bm25_and_hybrid_cli(tmp_path: Path) -> None:
    """Issue 4: 3 chunk sizes x {bm25, hybrid} on the demo corpus's gold documents, through
    the CLI."""
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("dense extra not installed: pip install 'ragmeter[dense]'")
    corpus = _gold_documents(tmp_path / "docs")
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  chunker.size: [400, 800, 1200]\n  retriever: [bm25, hybrid]\n")
    started = time.perf_counter()
    result = CliRunner().invoke(
        sweep,
        [
            str(grid),
            "--gold",
            str(example_gold_path()),
            "--corpus",
            str(corpus),
            "--store",
            str(tmp_path / "r.db"),
            "--json",
        ],
        # Content-keyed embeddings and indexes, kept between sessions (issue 29.5).
        env={"RAGMETER_CACHE_DIR": str(persistent_cache("sweep"))},
    )
    elapsed = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["runs"]) == 6 and data["by_tag"]
    print(f"sweep 3 sizes x (bm25, hybrid): {elapsed:.1f}s")
