"""Pipeline files and the :class:`Pipeline` they build: chunk, retrieve, fuse, re-rank.

A pipeline file is YAML with these sections (all optional; defaults shown)::

    chunker: {kind: markdown, size: 1000}      # ChunkerConfig fields
    retriever: bm25                             # bm25 | dense | hybrid
    dense: {model: all-MiniLM-L6-v2, ann_threshold: 50000}
    fusion: {method: rrf, k: 60, depth: 100}    # or method: weighted, weights: {bm25: 0.5,
                                                #   dense: 0.5}, normalization: minmax|zscore
    rerank: {top_n: 20, cross_encoder: /path}   # or llm: {base_url, model, api_key_env}
    rewrite: {method: rm3, fb_docs: 10, fb_terms: 10, original_weight: 0.5}
                                                # or method: llm, llm: {base_url, model, …}

Unknown keys anywhere are a :class:`~ragmeter.errors.ConfigError` naming the allowed ones.
``PipelineConfig.to_dict()`` is the full resolved config a run stores. A ``Pipeline``
records how long each stage took (index build once; rewrite, retrieve, fuse and rerank per
call): :meth:`Pipeline.stage_latency_summary`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.documents import Chunk, Hit
from ragmeter.errors import ConfigError
from ragmeter.executors.pickling import Transient, new_lock
from ragmeter.pipelines._config import (
    FUSION_DEFAULTS,
    check_keys,
    llm_settings,
    parse_dense,
    parse_fusion,
    parse_rerank,
    parse_rewrite,
)
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.retrievers.base import RetrievalOutput
from ragmeter.run import QuestionResult

__all__ = [
    "RETRIEVERS",
    "SECTIONS",
    "Pipeline",
    "PipelineConfig",
    "PipelineResources",
    "load_pipeline_file",
]

SECTIONS = ("chunker", "retriever", "dense", "fusion", "rerank", "rewrite")
RETRIEVERS = ("bm25", "dense", "hybrid")
STAGES = ("rewrite", "retrieve", "fuse", "rerank")


@dataclass(frozen=True)
class PipelineConfig:
    """A resolved pipeline: every section with its defaults filled in.

    >>> cfg = PipelineConfig.from_dict({"retriever": "hybrid", "chunker": {"size": 500}})
    >>> cfg.to_dict()["fusion"]["method"], cfg.chunker.size
    ('rrf', 500)
    >>> PipelineConfig.from_dict({"retriver": "bm25"})
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: pipeline: unknown key 'retriver'; allowed: chunker, retriever, dense, fusion, rerank, rewrite
    """

    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    retriever: str = "bm25"
    dense: Mapping[str, Any] = field(default_factory=lambda: parse_dense(None, "pipeline"))
    fusion: Mapping[str, Any] = field(default_factory=lambda: dict(FUSION_DEFAULTS))
    rerank: Mapping[str, Any] | None = None
    rewrite: Mapping[str, Any] | None = None

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any] | None,
        *,
        source: str = "pipeline",
        chunker: ChunkerConfig | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> PipelineConfig:
        """Validate plain data; ``chunker`` is used when the data has no ``chunker``
        section; ``environ`` (default ``os.environ``) supplies ``api_key_env`` keys."""
        data = {} if data is None else data
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a mapping of sections ({', '.join(SECTIONS)})")
        check_keys(data, SECTIONS, source)
        env = os.environ if environ is None else environ
        if data.get("chunker") is not None:
            if not isinstance(data["chunker"], Mapping):
                raise ConfigError(f"{source}: chunker must be a mapping of ChunkerConfig fields")
            try:
                chunk_cfg = ChunkerConfig.from_dict(data["chunker"])
            except ConfigError as exc:
                raise ConfigError(f"{source}: {exc}") from None
        else:
            chunk_cfg = chunker or ChunkerConfig()
        retriever = data.get("retriever", "bm25")
        if retriever not in RETRIEVERS:
            raise ConfigError(
                f"{source}: retriever must be one of {', '.join(RETRIEVERS)}, got {retriever!r}"
            )
        rewrite = parse_rewrite(data.get("rewrite"), source, env)
        if rewrite is not None and rewrite["method"] == "rm3" and retriever == "dense":
            raise ConfigError(
                f"{source}: rewrite method rm3 expands BM25 queries; use retriever bm25 or hybrid"
            )
        return cls(
            chunker=chunk_cfg,
            retriever=retriever,
            dense=parse_dense(data.get("dense"), source),
            fusion=parse_fusion(data.get("fusion"), source),
            rerank=parse_rerank(data.get("rerank"), source, env),
            rewrite=rewrite,
        )

    @property
    def rewrite_needs_bm25(self) -> bool:
        """True when the rewriter (RM3) needs a BM25 index."""
        return self.rewrite is not None and self.rewrite["method"] == "rm3"

    def to_dict(self) -> dict[str, Any]:
        """The full resolved config (no secrets: API keys are named by variable only)."""
        return {
            "chunker": self.chunker.to_dict(),
            "retriever": self.retriever,
            "dense": dict(self.dense),
            "fusion": dict(self.fusion),
            "rerank": _public(self.rerank),
            "rewrite": _public(self.rewrite),
        }


def _public(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    out = {k: v for k, v in section.items() if k != "llm"}
    if section.get("llm") is not None:
        out["llm"] = {k: v for k, v in section["llm"].items() if k != "api_key"}
    return out


def load_pipeline_file(path: str | Path, *, chunker: ChunkerConfig | None = None) -> PipelineConfig:
    """Read and validate a pipeline YAML file; errors name the file.

    >>> load_pipeline_file("pipeline.yaml").retriever  # doctest: +SKIP
    'hybrid'
    """
    from ragmeter.formats.strict_yaml import load_yaml

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"pipeline file {p}: cannot read ({exc.strerror})") from None
    # The strict loader: no alias expansion, duplicate keys named (issue 19.3).
    data, _ = load_yaml(text, p, "pipeline file", ConfigError)
    return PipelineConfig.from_dict(data, source=f"pipeline file {p}", chunker=chunker)


class PipelineResources(Transient):
    """Indexes, embedders and embeddings shared by the pipelines built from it.

    A sweep builds one and hands it to every :class:`Pipeline`, so configs that share
    a chunking reuse its chunks, BM25 index and embeddings (also cached on disk when
    ``cache_dir`` is given).
    """

    _TRANSIENT = {"_lock": new_lock}

    def __init__(self, corpus: Any, cache_dir: Path | None = None) -> None:
        self.corpus = corpus
        self.cache_dir = cache_dir
        self._lock = threading.Lock()
        self._chunks: dict[str, list[Chunk]] = {}
        self._bm25: dict[str, Any] = {}
        self._dense: dict[tuple[str, str, int], Any] = {}
        self._emb_caches: dict[str, Any] = {}

    @property
    def titles(self) -> dict[str, str]:
        return {doc_id: doc.title for doc_id, doc in self.corpus.documents.items()}

    def chunks(self, chunker: ChunkerConfig) -> list[Chunk]:
        from ragmeter.pipelines.chunkers import chunk_corpus

        with self._lock:
            key = chunker.key()
            if key not in self._chunks:
                self._chunks[key] = chunk_corpus(self.corpus, chunker)
            return self._chunks[key]

    def bm25(self, chunker: ChunkerConfig) -> tuple[Any, float]:
        """The BM25 index for ``chunker`` and the seconds it took here (0 when reused)."""
        from ragmeter.pipelines.bm25 import BM25Retriever, load_or_build_bm25

        key = chunker.key()
        if key in self._bm25:
            return self._bm25[key], 0.0
        started = time.perf_counter()
        if self.cache_dir is None:
            index = BM25Retriever(self.chunks(chunker), self.titles)
        else:
            index = load_or_build_bm25(self.corpus, chunker, self.cache_dir)
        self._bm25[key] = index
        return index, time.perf_counter() - started

    def dense(self, chunker: ChunkerConfig, settings: Mapping[str, Any]) -> tuple[Any, float]:
        """The dense index for ``chunker`` and model, and the seconds it took here."""
        from ragmeter.pipelines.dense import DenseRetriever, EmbeddingCache, get_embedder

        key = (chunker.key(), str(settings["model"]), int(settings["ann_threshold"]))
        if key in self._dense:
            return self._dense[key], 0.0
        started = time.perf_counter()
        embedder = get_embedder(str(settings["model"]))
        if embedder.key not in self._emb_caches:
            self._emb_caches[embedder.key] = EmbeddingCache.for_model(
                self.cache_dir, embedder.key, embedder.libraries
            )
        index = DenseRetriever(
            self.chunks(chunker),
            embedder,
            self._emb_caches[embedder.key],
            titles=self.titles,
            ann_threshold=int(settings["ann_threshold"]),
        )
        self._dense[key] = index
        return index, time.perf_counter() - started


def _no_timings(_pipeline: Pipeline) -> list[dict[str, float]]:
    return []


class Pipeline(Transient):
    """A reference retrieval pipeline over a corpus; ``retrieve(question, k)`` -> hits.

    A pipeline pickles with its indexes and models (the Ray executor ships it to its
    workers, which never re-index or re-embed); a copy starts with no stage timings of
    its own and a new lock.

    >>> from ragmeter.corpus import load_corpus
    >>> p = Pipeline(PipelineConfig(retriever="bm25"), load_corpus("docs/"))  # doctest: +SKIP
    >>> p.retrieve("how do I install?", 5)                                     # doctest: +SKIP
    >>> p.stage_latency_summary()["retrieve"]["p50_ms"]                        # doctest: +SKIP
    """

    # Per-process: timings measured in a copy stay with the copy.
    _TRANSIENT = {"_lock": new_lock, "_timings": _no_timings}

    def __init__(
        self,
        config: PipelineConfig,
        corpus: Any,
        *,
        cache_dir: Path | None = None,
        resources: PipelineResources | None = None,
    ) -> None:
        self.pipeline_config = config
        res = resources if resources is not None else PipelineResources(corpus, cache_dir)
        self.index_build_ms: dict[str, float] = {}
        self.bm25: Any = None
        self.dense: Any = None
        if config.retriever in ("bm25", "hybrid") or config.rewrite_needs_bm25:
            self.bm25, seconds = res.bm25(config.chunker)
            self.index_build_ms["bm25"] = seconds * 1000
        if config.retriever in ("dense", "hybrid"):
            self.dense, seconds = res.dense(config.chunker, config.dense)
            self.index_build_ms["dense"] = seconds * 1000
        self.chunks: list[Chunk] = res.chunks(config.chunker)
        self.rewriter = _make_rewriter(config.rewrite, self.bm25)
        self.reranker = _make_reranker(config.rerank)
        self._timings: list[dict[str, float]] = []
        self._lock = threading.Lock()
        self.config: dict[str, Any] = config.to_dict()
        if self.dense is not None:
            self.config["dense"]["search"] = self.dense.config["search"]
            self.config["dense"]["model_key"] = self.dense.config["model_key"]

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """The top ``k`` hits; stage timings of this call are recorded."""
        return self.retrieve_full(question, k).hits

    def retrieve_full(self, question: str, k: int) -> RetrievalOutput:
        """The top ``k`` hits with this call's stage timings (ms), which are also recorded.

        ``evaluate()`` calls this, so the timings travel with each question's result
        (from Ray workers too) and :meth:`stage_latency_of` summarises a whole run.
        """
        cfg = self.pipeline_config
        timing: dict[str, float] = {}
        t0 = time.perf_counter()
        query_text, terms = question, None
        if self.rewriter is not None:
            rewritten = self.rewriter.rewrite(question)
            query_text, terms = rewritten.text, rewritten.terms
            timing["rewrite"] = _ms(t0)
        rerank_n = int(cfg.rerank["top_n"]) if cfg.rerank is not None else 0
        depth = max(k, rerank_n)
        if cfg.retriever == "hybrid":
            depth = max(depth, int(cfg.fusion["depth"]))
        t1 = time.perf_counter()
        rankings: list[list[Hit]] = []
        if self.bm25 is not None and cfg.retriever != "dense":
            if terms is not None:
                rankings.append(self.bm25.retrieve_weighted(terms, depth))
            else:
                rankings.append(self.bm25.retrieve(query_text, depth))
        if self.dense is not None:
            rankings.append(self.dense.retrieve(query_text, depth))
        timing["retrieve"] = _ms(t1)
        if cfg.retriever == "hybrid":
            t2 = time.perf_counter()
            hits = _fuse(rankings, cfg.fusion)
            timing["fuse"] = _ms(t2)
        else:
            hits = rankings[0]
        if self.reranker is not None:
            from ragmeter.pipelines.rerank import rerank_top

            t3 = time.perf_counter()
            hits = rerank_top(self.reranker, question, hits, rerank_n)
            timing["rerank"] = _ms(t3)
        with self._lock:
            self._timings.append(timing)
        return RetrievalOutput(hits=hits[:k], stages=timing)

    def retrieve_many(self, questions: Sequence[str], k: int) -> list[list[Hit]]:
        """``retrieve`` for each question (benchmarks)."""
        return [self.retrieve(q, k) for q in questions]

    @property
    def call_timings(self) -> list[dict[str, float]]:
        """Per-call stage timings in milliseconds, in call order."""
        with self._lock:
            return [dict(t) for t in self._timings]

    def stage_latency_summary(self) -> dict[str, Any]:
        """Index build time per index, and per stage: calls, mean, p50 and p95 in ms.

        >>> Pipeline.summarize([{"retrieve": 1.0}, {"retrieve": 3.0}], {"bm25": 5.0})
        {'index_build_ms': {'bm25': 5.0}, 'retrieve': {'n': 2, 'mean_ms': 2.0, 'p50_ms': 2.0, 'p95_ms': 2.9}}
        """
        return self.summarize(self.call_timings, self.index_build_ms)

    def stage_latency_of(self, results: Iterable[QuestionResult]) -> dict[str, Any]:
        """:meth:`stage_latency_summary` of a run, from the timings stored with its results.

        Unlike the calls this object saw, the results include questions answered on
        Ray workers and in an earlier, interrupted part of the run.
        """
        timings = [r.extra["stages"] for r in results if r.extra.get("stages")]
        return self.summarize(timings, self.index_build_ms)

    @staticmethod
    def summarize(
        timings: Sequence[Mapping[str, float]], build: Mapping[str, float]
    ) -> dict[str, Any]:
        import numpy as np

        out: dict[str, Any] = {"index_build_ms": {k: round(v, 3) for k, v in build.items()}}
        for stage in STAGES:
            values = [t[stage] for t in timings if stage in t]
            if not values:
                continue
            arr = np.asarray(values, dtype=np.float64)
            out[stage] = {
                "n": len(values),
                "mean_ms": round(float(arr.mean()), 3),
                "p50_ms": round(float(np.percentile(arr, 50)), 3),
                "p95_ms": round(float(np.percentile(arr, 95)), 3),
            }
        return out

    def close(self) -> None:
        """Nothing to release (indexes are plain memory); present for the Retriever protocol."""


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def _fuse(rankings: list[list[Hit]], fusion: Mapping[str, Any]) -> list[Hit]:
    if fusion["method"] == "rrf":
        from ragmeter.pipelines.hybrid import rrf

        return rrf(rankings, int(fusion["k"]))
    from ragmeter.pipelines.fusion import weighted_fusion

    weights = [float(fusion["weights"]["bm25"]), float(fusion["weights"]["dense"])]
    return weighted_fusion(rankings, weights, str(fusion["normalization"]))


def _make_rewriter(section: Mapping[str, Any] | None, bm25: Any) -> Any:
    if section is None:
        return None
    if section["method"] == "rm3":
        from ragmeter.pipelines.rewrite import RM3

        return RM3(
            bm25,
            fb_docs=section["fb_docs"],
            fb_terms=section["fb_terms"],
            original_weight=section["original_weight"],
        )
    from ragmeter.pipelines.rewrite import LLMExpansion

    return LLMExpansion(llm_settings(section["llm"]))


def _make_reranker(section: Mapping[str, Any] | None) -> Any:
    if section is None:
        return None
    if section.get("cross_encoder"):
        from ragmeter.pipelines.rerank import CrossEncoderReranker

        return CrossEncoderReranker(section["cross_encoder"])
    from ragmeter.pipelines.rerank import LLMReranker

    return LLMReranker(llm_settings(section["llm"]))
