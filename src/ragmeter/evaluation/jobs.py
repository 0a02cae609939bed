"""The main job from specs: gold file + retriever spec + corpus -> a stored run.

``evaluate()`` takes objects; the CLI has strings. This module joins them —
load the gold set, build the retriever over the corpus, warn about gold
documents the corpus lacks — and resumes a stored run from its own record.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._redact import is_redacted
from ragmeter.corpus import Corpus
from ragmeter.errors import ConfigError
from ragmeter.evaluation.evaluate import Progress, evaluate_setup
from ragmeter.evaluation.job import EvalJob, RetrieverOptions
from ragmeter.evaluation.report import RunReport
from ragmeter.evaluation.resumed import (
    RESUMED_REQUEST,
    check_resumed_corpus,
    check_resumed_gold,
    check_resumed_headers,
)
from ragmeter.evaluation.scoring import default_level
from ragmeter.evaluation.setup import RetrieverSetup, RunSettings, require_gold_docs
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet
from ragmeter.pipelines.builtin import BuiltRetriever, build_retriever
from ragmeter.run import RunInfo

__all__ = ["EvalJob", "evaluate_spec", "rebuild_retriever", "resume_run", "run_job"]


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


def run_job(
    job: EvalJob,
    *,
    store: Any,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    generator: Any = None,
    told: Collection[str] | None = None,
) -> RunReport:
    """Run ``job``: a new run, or (``job.resume``) the rest of a stored one.

    ``generator`` is an object answering each question; ``None`` builds the job's own
    (``job.generator``). The store is the caller's (``job.store`` names it for shells).
    ``told`` names the job's fields the user set, for a resume to refuse a scoring setting
    it would otherwise ignore (``EvalJob.from_run``).

    >>> from ragmeter.store import Store
    >>> job = EvalJob(gold="gold.yaml", retriever="bm25", corpus="docs/")
    >>> report = run_job(job, store=Store.memory())  # doctest: +SKIP
    """
    if job.resume is not None:
        resumed = EvalJob.from_run(store, job.resume, given=job, told=told)
        check_resumed_headers(store.get_run(job.resume), job.options.headers)
        gold = job.gold if told is None or "gold" in told else None
        return resume_run(resumed, store=store, cache_dir=cache_dir, progress=progress,
                          generator=generator, gold=gold)  # fmt: skip
    return evaluate_spec(job, store=store, cache_dir=cache_dir, progress=progress,
                         generator=generator)  # fmt: skip


def evaluate_spec(
    job: EvalJob,
    *,
    store: Any,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    generator: Any = None,
) -> RunReport:
    """Load, build and evaluate a new run; the stored run keeps the full resolved config.

    ``job.options`` go to the adapter (``doc_field``, ``doc_root``, ``headers``…).
    ``job.follow_symlinks`` loads a corpus folder following links out of it; the choice
    is stored with the run, so ``resume_run`` reads the folder the same way.
    """
    if job.gold is None:
        raise ConfigError("an evaluation job needs a gold set (or a run to resume)")
    gold = load_gold(job.gold, split=job.split)
    corpus = job.corpus_source()
    retriever_options = job.options.adapter_options()
    built = build_retriever(
        job.retriever,
        corpus=corpus,
        chunker=job.chunker,
        cache_dir=cache_dir,
        timeout=job.timeout,
        max_response_bytes=job.options.max_response_bytes,
        options=retriever_options,
        # Only chunk-level recall reads an adapter's corpus cut with --chunker (issue 24).
        inventory=(job.level or default_level(gold)) == "chunk",
    )
    warnings = built.warnings + _missing_docs_warning(gold, built)
    config = dict(built.config)
    config.update({"gold": str(job.gold), "split": job.split, "timeout": job.timeout})
    config.update(_identity_config(retriever_options))
    if warnings:  # stored on the run, so `runs` marks it and `show` lists them later
        config["warnings"] = list(warnings)
    if job.corpus is not None:
        config["follow_symlinks"] = job.follow_symlinks
    try:
        setup = RetrieverSetup(
            built.retriever,
            spec=job.retriever,
            config=config,
            chunks=built.chunks,
            documents=built.documents,
        )
        settings = RunSettings(
            k=job.k,
            name=job.name,
            note=job.note,
            level=job.level,
            metrics=_with_defaults(job.metrics, job.k, gold),
            min_overlap=job.min_overlap,
            concurrency=job.concurrency,
            timeout=job.timeout,
            executor=job.executor,
        )
        report = evaluate_setup(gold, setup, settings, store=store, progress=progress,
                                generator=_generator(job, generator))  # fmt: skip
    finally:
        built.close()
    report.warnings.extend(w for w in warnings if w not in report.warnings)
    return _with_stage_latency(store, report, built)


def _generator(job: EvalJob, given: Any) -> Any:
    """The caller's generator, else the job's: a spec ``evaluate`` resolves (and closes),
    or for ``llm`` a client configured from the environment."""
    if given is not None:
        return given
    return job.build_generator() if job.generator in ("llm", "openai") else job.generator


def _identity_config(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``--doc-field``/``--doc-root`` as stored with the run, so resume reads ids the same way,
    and the names of its ``--header``s (never their values), so resume asks for them again."""
    out: dict[str, Any] = {}
    if (options or {}).get("headers"):
        out["header_names"] = sorted(str(name) for name in (options or {})["headers"])
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


def _stored_corpus(run: RunInfo, job: EvalJob) -> Corpus | None:
    """The run's corpus, read as it was at the start (``job.follow_symlinks``, from the
    run), with the same content: a corpus changed since, or another one given on resume,
    is refused, as it would score the rest of the run on other documents than its first
    part (issues 19.5, 24)."""
    corpus = job.load_corpus()
    if corpus is None:
        return None
    check_resumed_corpus(run, str(job.corpus), corpus.content_hash, following=job.follow_symlinks)
    return corpus


def rebuild_retriever(
    run: RunInfo,
    *,
    cache_dir: Path | None = None,
    retriever: str | None = None,
    follow_symlinks: bool | None = None,
    options: Mapping[str, Any] | None = None,
) -> BuiltRetriever:
    """The retriever of a stored run, built as the run built it: same spec, corpus (checked
    unchanged), chunker, timeout and id options. ``explain`` uses it; ``resume_run`` builds
    the same from its job.

    ``retriever`` replaces a spec stored with its secrets hidden (it must redact to it);
    ``options`` are adapter options given again: ``headers`` (never stored), and an HTTP
    request shape (``http_body``…), which must be the run's (a hidden credential of its body
    is taken from here).
    """
    shape = {key: value for key, value in (options or {}).items() if key in RESUMED_REQUEST}
    asked = None
    if retriever is not None or follow_symlinks or shape:
        # The spec only stands in for a redacted one (a hidden one is never asked with).
        spec = retriever or ("" if is_redacted(run.retriever) else run.retriever)
        asked = EvalJob(retriever=spec, follow_symlinks=bool(follow_symlinks),
                        options=RetrieverOptions(**shape))  # fmt: skip
    built = EvalJob.of_run(run, given=asked, told=list(shape))  # the shape must be the run's
    return _build_again(run, built, cache_dir, options)


def _build_again(
    run: RunInfo, job: EvalJob, cache_dir: Path | None, options: Mapping[str, Any] | None
) -> BuiltRetriever:
    return build_retriever(
        job.retriever,
        corpus=_stored_corpus(run, job),
        chunker=job.chunker,
        cache_dir=cache_dir,
        timeout=job.timeout,
        max_response_bytes=job.options.max_response_bytes,
        options={**job.options.adapter_options(), **(options or {})},
        inventory=run.level == "chunk",
    )


def resume_run(
    job: EvalJob,
    *,
    store: Any,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    generator: Any = None,
    gold: str | None = None,
) -> RunReport:
    """Finish an interrupted run: ``job`` is ``EvalJob.from_run(store, run)``.

    The corpus is read as the run read it (``--follow-symlinks`` included, from the
    run's config) and must still hold the same content. A generator given by spec
    (``module:function`` or a URL) is rebuilt from the run's config; an LLM generator
    must be passed again as ``generator``. The rest of the run is scored against the gold
    set stored with it; ``gold``, a gold file given again, must hold the same content.
    """
    if job.resume is None:
        raise ConfigError("resume_run needs a job made by EvalJob.from_run")
    run = store.get_run(job.resume)
    if gold is not None:  # checked before the retriever is built, which may take minutes
        given = load_gold(gold, split=job.split)
        if given.hash != run.gold_hash:  # the run may have unified spellings with its corpus
            corpus = job.load_corpus()
            check_resumed_gold(run, given, corpus.documents if corpus is not None else None)
    built = _build_again(run, job, cache_dir, None)
    try:
        settings = RunSettings(
            k=run.k,
            concurrency=job.concurrency,
            timeout=job.timeout,
            resume=run.id,
            executor=job.executor,
        )
        report = evaluate_setup(
            None,  # the run's stored gold set (one given again holds the same content)
            RetrieverSetup(built.retriever, chunks=built.chunks, documents=built.documents),
            settings,
            store=store,
            progress=progress,
            generator=_generator(job, generator),
        )
        return _with_stage_latency(store, report, built)
    finally:
        built.close()
