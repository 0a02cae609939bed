"""The main job from specs: gold file + retriever spec + corpus -> a stored run.

``evaluate()`` takes objects; the CLI has strings. This module joins them —
load the gold set, build the retriever over the corpus, warn about gold
documents the corpus lacks — and resumes a stored run from its own record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ragmeter._redact import is_redacted, redact
from ragmeter.corpus import Corpus, load_corpus
from ragmeter.errors import ConfigError, InputError
from ragmeter.evaluation.evaluate import DEFAULT_K, Progress, evaluate
from ragmeter.evaluation.report import RunReport
from ragmeter.evaluation.scoring import Level, default_level
from ragmeter.evaluation.setup import RetrieverSetup, require_gold_docs
from ragmeter.executors.base import Executor
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet
from ragmeter.pipelines.builtin import BuiltRetriever, build_retriever
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.run import RunInfo

__all__ = ["evaluate_spec", "resume_run"]


def _missing_docs_warning(gold: GoldSet, built: BuiltRetriever) -> list[str]:
    if built.corpus is None:
        return []
    missing = require_gold_docs(gold, list(built.corpus.documents), str(built.corpus.path))
    if not missing:
        return []
    listed = ", ".join(sorted(missing)[:10]) + (" …" if len(missing) > 10 else "")
    return [
        f"{len(missing)} document(s) named by the gold set are not in the corpus "
        f"and can never be found: {listed}"
    ]


def evaluate_spec(
    gold_path: str | Path,
    retriever: str,
    *,
    store: Any,
    corpus: str | Path | Corpus | None = None,
    chunker: ChunkerConfig | None = None,
    cache_dir: Path | None = None,
    k: int = DEFAULT_K,
    split: str = "test",
    name: str | None = None,
    note: str = "",
    level: Level | None = None,
    metrics: Sequence[str] | None = None,
    concurrency: int = 8,
    timeout: float | None = None,
    progress: Progress | None = None,
    generator: Any = None,
    executor: Literal["local", "ray"] | Executor = "local",
    ray_address: str | None = None,
    max_response_bytes: int | None = None,
    retriever_options: Mapping[str, Any] | None = None,
    follow_symlinks: bool = False,
) -> RunReport:
    """Load, build and evaluate; the stored run keeps the full resolved config.

    ``retriever_options`` go to the adapter (``doc_field``, ``doc_root``, ``headers``…).
    ``follow_symlinks`` loads a corpus folder following links out of it; the choice is
    stored with the run, so ``resume_run`` reads the folder the same way.

    >>> from ragmeter.store import Store
    >>> report = evaluate_spec("gold.yaml", "bm25", corpus="docs/", store=Store.memory())  # doctest: +SKIP
    """
    gold = load_gold(gold_path, split=split)
    from_path = isinstance(corpus, str | Path)
    if from_path and follow_symlinks:
        corpus = load_corpus(corpus, follow_symlinks=True)  # type: ignore[arg-type]
    built = build_retriever(
        retriever,
        corpus=corpus,
        chunker=chunker,
        cache_dir=cache_dir,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        options=retriever_options,
    )
    warnings = built.warnings + _missing_docs_warning(gold, built)
    config = dict(built.config)
    if built.inventory_only and (level or default_level(gold)) != "chunk":
        # Only chunk-level recall reads the corpus cut with --chunker: at doc or passage
        # level the chunker shaped nothing of this run, so it is not recorded.
        config.pop("chunker", None)
    config.update({"gold": str(gold_path), "split": split, "timeout": timeout})
    config.update(_identity_config(retriever_options))
    if warnings:  # stored on the run, so `runs` marks it and `show` lists them later
        config["warnings"] = list(warnings)
    if from_path:
        config["follow_symlinks"] = follow_symlinks
    try:
        setup = RetrieverSetup(
            built.retriever,
            spec=retriever,
            config=config,
            chunks=built.chunks,
            documents=built.documents,
        )
        report = evaluate(
            gold,
            setup,
            k=k,
            name=name,
            note=note,
            store=store,
            level=level,
            metrics=_with_defaults(metrics, k, gold),
            concurrency=concurrency,
            timeout=timeout,
            progress=progress,
            generator=generator,
            executor=executor,
            ray_address=ray_address,
        )
    finally:
        built.close()
    report.warnings.extend(w for w in warnings if w not in report.warnings)
    return _with_stage_latency(store, report, built)


def _identity_config(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``--doc-field``/``--doc-root`` as stored with the run, so resume reads ids the same way."""
    out: dict[str, Any] = {}
    for key in ("doc_field", "doc_root"):
        value = (options or {}).get(key)
        if value:
            out[key] = str(value) if isinstance(value, str | Path) else [str(v) for v in value]
    return out


def _with_stage_latency(store: Any, report: RunReport, built: BuiltRetriever) -> RunReport:
    """Keep a reference pipeline's per-stage timings in the run's config."""
    if built.pipeline is None:
        return report
    results = report.results.values() or store.results(report.run.id)
    stage_latency = built.pipeline.stage_latency_of(results)
    config = {**dict(report.run.config), "stage_latency": stage_latency}
    store.update_run(report.run.id, config=config)
    return report


def _with_defaults(extra: Sequence[str] | None, k: int, gold: GoldSet) -> list[str]:
    from ragmeter.evaluation.scoring import default_metrics
    from ragmeter.metrics import parse_metrics

    names = default_metrics(k, has_answers=any(item.answer_contains for item in gold))
    # List spellings (`-m P`, `-m ndcg_cut.5,10`, `-m official`) expand to their metrics.
    names += [str(m) for m in parse_metrics(list(extra or ()))]
    return list(dict.fromkeys(names))


def _stored_generator(run: RunInfo) -> str | None:
    spec = run.config.get("generator")
    if isinstance(spec, str) and is_redacted(spec):
        raise ConfigError(
            f"run {run.id}'s generator URL had a password, which is never stored: "
            "pass --generator again to resume it"
        )
    if isinstance(spec, str) and (":" in spec or spec.startswith("http")) and spec != "llm":
        return spec
    return None


def _stored_retriever(run: RunInfo, given: str | None) -> str:
    """The spec to resume with: the stored one, or ``given`` when secrets were hidden."""
    if not is_redacted(run.retriever):
        return run.retriever
    if given is not None and redact(given) == run.retriever:
        return given
    raise ConfigError(
        f"run {run.id}'s retriever spec {run.retriever!r} had secrets, which are never stored: "
        "pass the same --retriever again to resume it"
    )


def _stored_corpus(run: RunInfo, follow_symlinks: bool | None) -> Corpus | None:
    """The run's corpus, read as it was at the start: links followed or not, same content.

    ``follow_symlinks`` is what the resume asked for (``None``: nothing). A run
    started without following links is refused a resume that follows them, and a
    corpus whose content changed since is refused: either would score the rest of
    the run on other documents than its first part (issue 19.5).
    """
    config = run.config
    path = config.get("corpus")
    if not isinstance(path, str):
        return None
    stored = config.get("follow_symlinks")  # absent for runs stored before it was kept
    if follow_symlinks and stored is False:
        raise ConfigError(
            f"run {run.id} read its corpus {path} without --follow-symlinks: resuming with "
            "it would index files its first part never saw; drop --follow-symlinks"
        )
    follow = bool(stored) if stored is not None else bool(follow_symlinks)
    corpus = load_corpus(path, follow_symlinks=follow)
    expected = config.get("corpus_hash")
    if expected and corpus.content_hash != expected:
        how = " (following links)" if follow else ""
        raise InputError(
            f"run {run.id}'s corpus {path}{how} changed since the run started (content hash "
            f"{str(expected)[:12]}, now {corpus.content_hash[:12]}): resuming would score the "
            "rest of the run on other documents; start a new run"
        )
    return corpus


def resume_run(
    run_ref: int | str,
    *,
    store: Any,
    cache_dir: Path | None = None,
    concurrency: int = 8,
    progress: Progress | None = None,
    generator: Any = None,
    executor: Literal["local", "ray"] | Executor = "local",
    ray_address: str | None = None,
    retriever: str | None = None,
    follow_symlinks: bool | None = None,
) -> RunReport:
    """Finish an interrupted run with the retriever and corpus it was started with.

    The corpus is read as the run read it (``--follow-symlinks`` included, from the
    run's config) and must still hold the same content; ``follow_symlinks=True`` on a
    run that did not follow links is refused.

    A generator given by spec (``module:function`` or a URL) is rebuilt from the run's
    config; an LLM generator must be passed again as ``generator``. A retriever spec
    stored with its secrets hidden (a URL password, an ``api_key=`` parameter) is
    taken from ``retriever``, which must be that same spec once redacted.
    """
    run = store.get_run(run_ref)
    config = dict(run.config)
    generator = generator if generator is not None else _stored_generator(run)
    chunker = ChunkerConfig.from_dict(config.get("chunker") or {})
    timeout = config.get("timeout")
    built = build_retriever(
        _stored_retriever(run, retriever),
        corpus=_stored_corpus(run, follow_symlinks),
        chunker=chunker,
        cache_dir=cache_dir,
        timeout=timeout,
        max_response_bytes=(config.get("retriever") or {}).get("max_response_bytes"),
        options={key: config[key] for key in ("doc_field", "doc_root") if config.get(key)},
    )
    try:
        report = evaluate(
            GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name),
            RetrieverSetup(built.retriever, chunks=built.chunks, documents=built.documents),
            k=run.k,
            store=store,
            concurrency=concurrency,
            timeout=timeout,
            resume=run.id,
            progress=progress,
            generator=generator,
            executor=executor,
            ray_address=ray_address,
        )
        return _with_stage_latency(store, report, built)
    finally:
        built.close()
