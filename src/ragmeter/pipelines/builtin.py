"""Build a retriever from a spec plus the corpus it searches.

The one place that knows how ``--retriever``, ``--corpus`` and ``--chunker``
fit together, shared by ``eval``, ``retrieve``, ``demo`` and resume. Built-in
pipelines are looked up by name (``bm25``, ``dense``, ``hybrid``) or read from a
pipeline file (``*.yaml``/``*.yml``, see ``pipeline.py``); anything else goes to the
adapters (``module:function``, ``http(s)://…``, ``run:FILE``).

For ``dense``, ``hybrid`` and pipeline files ``BuiltRetriever.pipeline`` is the
:class:`~ragmeter.pipelines.pipeline.Pipeline`, whose ``stage_latency_summary()``
gives index build and per-stage timings after a run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.corpus import Corpus, load_corpus
from ragmeter.documents import Chunk
from ragmeter.errors import ConfigError
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus

__all__ = ["BUILTIN_NAMES", "BuiltRetriever", "build_retriever"]

BUILTIN_NAMES = ("bm25", "dense", "hybrid")
PIPELINE_SUFFIXES = (".yaml", ".yml")


@dataclass
class BuiltRetriever:
    """A retriever with what evaluation needs to judge its output."""

    retriever: Any
    corpus: Corpus | None
    chunks: list[Chunk] | None
    config: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    pipeline: Any = None
    # True for adapters: the retriever chunked the documents itself, and ``chunks`` (when
    # asked for: ``build_retriever(inventory=True)``) is only the corpus cut with --chunker
    # for chunk-level recall (nothing else reads it).
    inventory_only: bool = False

    @property
    def documents(self) -> Mapping[str, Any] | None:
        return self.corpus.documents if self.corpus is not None else None

    def close(self) -> None:
        close = getattr(self.retriever, "close", None)
        if callable(close):
            close()


def _bm25(
    corpus: Corpus, chunker: ChunkerConfig, cache_dir: Path | None
) -> tuple[Any, list[Chunk]]:
    from ragmeter.pipelines.bm25 import BM25Retriever, load_or_build_bm25

    if cache_dir is None:
        retriever = BM25Retriever(chunk_corpus(corpus, chunker), titles=_titles(corpus))
    else:
        retriever = load_or_build_bm25(corpus, chunker, cache_dir)
    return retriever, list(retriever.chunks)


def _titles(corpus: Corpus) -> dict[str, str]:
    return {doc_id: doc.title for doc_id, doc in corpus.documents.items()}


def _preset(name: str) -> Callable[[Corpus, ChunkerConfig, Path | None], tuple[Any, list[Chunk]]]:
    def build(
        corpus: Corpus, chunker: ChunkerConfig, cache_dir: Path | None
    ) -> tuple[Any, list[Chunk]]:
        from ragmeter.pipelines.pipeline import Pipeline, PipelineConfig

        config = PipelineConfig.from_dict({"retriever": name}, chunker=chunker)
        pipeline = Pipeline(config, corpus, cache_dir=cache_dir)
        return pipeline, pipeline.chunks

    return build


def is_pipeline_file(spec: str) -> bool:
    """True when ``spec`` names a pipeline file (by its suffix).

    >>> is_pipeline_file("hybrid.yaml"), is_pipeline_file("bm25")
    (True, False)
    """
    return spec.lower().endswith(PIPELINE_SUFFIXES)


_FACTORIES: dict[str, Callable[[Corpus, ChunkerConfig, Path | None], tuple[Any, list[Chunk]]]] = {
    "bm25": _bm25,
    "dense": _preset("dense"),
    "hybrid": _preset("hybrid"),
}


def build_retriever(
    spec: str,
    *,
    corpus: str | Path | Corpus | None = None,
    chunker: ChunkerConfig | None = None,
    cache_dir: Path | None = None,
    timeout: float | None = None,
    max_response_bytes: int | None = None,
    options: Mapping[str, Any] | None = None,
    inventory: bool = False,
    chunk: Callable[[Corpus, ChunkerConfig], list[Chunk]] = chunk_corpus,
) -> BuiltRetriever:
    """Resolve ``spec`` into a retriever; built-ins are indexed over ``corpus``.

    Adapters (``module:function``, HTTP, run files) chunk their own documents; with
    ``inventory`` (a chunk-level run) and a corpus they also get the corpus cut with
    ``chunker`` by ``chunk``, so chunk-level recall can count chunks that never came back.
    At doc and passage level nothing reads those chunks, so they are not made (issue 24).
    ``options`` go to :func:`~ragmeter.retrievers.resolve_retriever` for those adapters
    (``doc_field``, ``doc_root``, ``headers``…); the corpus folder is a ``doc_root`` too.

    >>> built = build_retriever("bm25", corpus="docs/")  # doctest: +SKIP
    >>> built.retriever.retrieve("how do I install?", 5)  # doctest: +SKIP
    """
    chunker = chunker or ChunkerConfig()
    loaded: Corpus | None = None
    if corpus is not None:
        loaded = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    config: dict[str, Any] = {"chunker": chunker.to_dict()}
    if loaded is not None:
        config["corpus"] = str(loaded.path)
        config["corpus_hash"] = loaded.content_hash
    warnings = list(loaded.warnings) if loaded is not None else []
    if options and (is_pipeline_file(spec) or spec in _FACTORIES):
        # A built-in's hits already carry corpus ids: an adapter option would do nothing.
        flags = {"headers": "header"}
        names = ", ".join(
            f"--{flags.get(name, name).replace('_', '-')}" for name in sorted(options)
        )
        raise ConfigError(f"{names} apply to your own retrievers, not to --retriever {spec}")
    if is_pipeline_file(spec):
        return _from_file(spec, loaded, chunker, cache_dir, config, warnings)
    factory = _FACTORIES.get(spec)
    if factory is not None:
        if loaded is None:
            raise ConfigError(f"--retriever {spec} searches a corpus: pass --corpus PATH")
        from ragmeter.retrievers import as_retriever

        index, chunks = factory(loaded, chunker, cache_dir)
        retriever = as_retriever(index, spec=spec)
        config["retriever"] = dict(getattr(retriever, "config", {}) or {})
        pipeline = None
        if hasattr(index, "stage_latency_summary"):
            pipeline = index
            config["pipeline"] = dict(index.config)
        return BuiltRetriever(retriever, loaded, chunks, config, warnings, pipeline)

    from ragmeter.retrievers import resolve_retriever

    kwargs: dict[str, Any] = dict(options or {})
    if timeout is not None:
        kwargs["timeout"] = timeout
    if loaded is not None and loaded.path and Path(loaded.path).is_dir():
        # Absolute paths under --corpus become corpus-relative ids (issue 14.2).
        # Absolute only: a relative id under it (docs/x.md) may be a corpus id of its own; the
        # id resolver, which knows the corpus, reads such ids (issue 24.2).
        kwargs["doc_root"] = [*_roots(kwargs.get("doc_root")), Path(loaded.path).resolve()]
    retriever = resolve_retriever(spec, max_response_bytes=max_response_bytes, **kwargs)
    cut = chunk(loaded, chunker) if inventory and loaded is not None else None
    if cut is None:
        # The retriever chunks its own documents: --chunker shaped nothing, so it is not
        # recorded as if it had (issue 24.6).
        del config["chunker"]
    config["retriever"] = dict(getattr(retriever, "config", {}) or {})
    return BuiltRetriever(retriever, loaded, cut, config, warnings, inventory_only=True)


def _roots(value: Any) -> list[Any]:
    if value is None:
        return []
    return [value] if isinstance(value, str | Path) else list(value)


def _from_file(
    spec: str,
    corpus: Corpus | None,
    chunker: ChunkerConfig,
    cache_dir: Path | None,
    config: dict[str, Any],
    warnings: list[str],
) -> BuiltRetriever:
    from ragmeter.pipelines.pipeline import Pipeline, load_pipeline_file
    from ragmeter.retrievers import as_retriever

    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"pipeline file {path} not found")
    # The file's chunker section wins over --chunker; without one, --chunker applies.
    pipeline_config = load_pipeline_file(path, chunker=chunker)
    if corpus is None:
        raise ConfigError(f"pipeline file {path} searches a corpus: pass --corpus PATH")
    pipeline = Pipeline(pipeline_config, corpus, cache_dir=cache_dir)
    retriever = as_retriever(pipeline, spec=spec)
    config["chunker"] = pipeline_config.chunker.to_dict()
    config["pipeline_file"] = str(path)
    config["pipeline"] = dict(pipeline.config)
    config["retriever"] = dict(getattr(retriever, "config", {}) or {})
    return BuiltRetriever(retriever, corpus, pipeline.chunks, config, warnings, pipeline)
