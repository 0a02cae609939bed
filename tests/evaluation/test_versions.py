"""Reproducible runs: library versions recorded, shown, compared, and in cache keys (issue 14.6).

An "upgrade" is a real distribution record: a ``NAME-9.9.9.dist-info`` folder put
first on ``sys.path``, which ``importlib.metadata`` then reports, as it would after
``pip install``.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

import ragmeter
from ragmeter.cli import main
from ragmeter.compare.diff import diff_runs
from ragmeter.corpus import Corpus
from ragmeter.documents import Document
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.jobs import run_job
from ragmeter.evaluation.versions import SHAPING_LIBRARIES, run_versions, version_differences
from ragmeter.pipelines.bm25 import BM25_LIBRARIES, load_or_build_bm25
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.pipelines.dense import DENSE_LIBRARIES, EmbeddingCache
from ragmeter.store import Store

GOLD = """\
- id: refund
  question: how long do refunds take?
  relevant: [{doc: refunds.md, quote: "within 30 days"}]
- id: ship
  question: is shipping free?
  relevant: [{doc: shipping.md}]
"""
DOCS = {
    "refunds.md": "# Refunds\n\nRefunds are accepted within 30 days of delivery.\n",
    "shipping.md": "# Shipping\n\nShipping is free above 50 euros.\n",
}


def _upgrade(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    """Make ``importlib.metadata`` report ``name`` 9.9.9, like a fresh install would."""
    folder = tmp_path / "site"
    info = folder / f"{name.replace('-', '_')}-9.9.9.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 9.9.9\n")
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    assert importlib.metadata.version(name) == "9.9.9"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD)
    return gold, docs


def test_a_bm25_run_records_the_versions_that_shaped_it(
    files: tuple[Path, Path], store: Store
) -> None:
    """Issue 14.6: ragmeter, numpy, bm25s and PyStemmer versions are stored with the run."""
    gold, docs = files
    report = run_job(EvalJob(str(gold), "bm25", str(docs)), store=store)
    versions = store.get_run(report.run.id).config["versions"]
    for name in ("ragmeter", "numpy", "bm25s", "PyStemmer"):
        assert versions[name] == importlib.metadata.version(name)
    assert report.to_dict()["run"]["versions"] == versions


def test_show_and_diff_print_versions_and_diff_warns_when_they_differ(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 14.6: `show` prints the versions; `diff` prints both and warns on a difference."""
    gold, docs = files
    db = tmp_path / "runs.db"
    store = Store.open(f"sqlite:///{db}")
    a = run_job(EvalJob(str(gold), "bm25", str(docs), name="a"), store=store)
    b = run_job(EvalJob(str(gold), "bm25", str(docs), name="b"), store=store)
    # Run b as if made where PyStemmer 2.2.0 was installed (the downgrade of issue 14).
    older = {**b.run.config["versions"], "PyStemmer": "2.2.0"}
    store.update_run(b.run.id, config={**b.run.config, "versions": older})
    store.close()

    runner = CliRunner()
    shown = runner.invoke(main, ["show", "a", "--store", f"sqlite:///{db}"])
    assert shown.exit_code == 0, shown.output
    assert f"ragmeter {importlib.metadata.version('ragmeter')}" in shown.output
    assert f"bm25s {importlib.metadata.version('bm25s')}" in shown.output

    with Store.open(f"sqlite:///{db}") as again:
        diff = diff_runs(again, a.run.id, b.run.id)
    now = importlib.metadata.version("PyStemmer")
    assert (
        "the runs used different versions of libraries that shape the numbers: "
        f"PyStemmer {now} vs 2.2.0"
    ) in diff.warnings
    assert diff.to_dict()["versions"]["b"]["PyStemmer"] == "2.2.0"
    printed = runner.invoke(main, ["diff", "a", "b", "--store", f"sqlite:///{db}"])
    assert printed.exit_code == 0, printed.output
    assert "PyStemmer 2.2.0" in printed.output and f"PyStemmer {now}" in printed.output


def test_an_upgrade_rebuilds_the_bm25_index(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 14.6: the index cache key holds the bm25s/PyStemmer versions; stale is not served."""
    corpus = Corpus.from_documents([Document(id=name, text=text) for name, text in DOCS.items()])
    cache = tmp_path / "cache"
    chunker = ChunkerConfig()
    assert load_or_build_bm25(corpus, chunker, cache).from_cache is False
    assert load_or_build_bm25(corpus, chunker, cache).from_cache is True
    _upgrade(monkeypatch, tmp_path, "PyStemmer")
    assert load_or_build_bm25(corpus, chunker, cache).from_cache is False
    assert len(list((cache / "bm25").iterdir())) == 2


def test_an_upgrade_changes_the_embedding_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 14.6: embeddings cached under one torch version are not read under another."""
    before = EmbeddingCache.for_model(tmp_path, "model@abc").directory
    assert EmbeddingCache.for_model(tmp_path, "model@abc").directory == before
    _upgrade(monkeypatch, tmp_path, "torch")
    assert EmbeddingCache.for_model(tmp_path, "model@abc").directory != before


def test_the_run_record_covers_every_library_a_cache_key_holds() -> None:
    """Issue 14.6: what shapes a cached index or embedding is also recorded on the run
    (both dense backends, issue 29.4)."""
    from ragmeter.pipelines.dense_onnx import ONNX_LIBRARIES

    assert set(BM25_LIBRARIES) | set(DENSE_LIBRARIES) | set(ONNX_LIBRARIES) <= set(
        SHAPING_LIBRARIES
    )


def test_version_differences_ignore_libraries_one_run_did_not_use() -> None:
    """Issue 14.6: only a library both runs recorded, at different versions, is a difference."""
    a = {"ragmeter": "0.1.0", "bm25s": "0.2.1", "torch": "2.3.0"}
    b = {"ragmeter": "0.1.0", "bm25s": "0.2.3"}
    assert version_differences(a, b) == ["bm25s 0.2.1 vs 0.2.3"]


def test_a_callable_run_records_ragmeter_and_numpy() -> None:
    """Issue 14.6: every run records at least ragmeter and numpy."""
    gold = ragmeter.GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": [{"doc": "a.md"}]}]
    )
    report = ragmeter.evaluate(gold, lambda q, k: [{"doc": "a.md"}])
    versions = report.run.config["versions"]
    assert {"ragmeter", "numpy"} <= set(versions)
    assert set(run_versions()) >= {"ragmeter", "numpy"}
