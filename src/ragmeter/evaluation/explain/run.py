"""``explain_run``: every miss of a stored run, the causes the evidence supports, stored with it."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragmeter.corpus import Corpus, load_corpus
from ragmeter.errors import ConfigError, RagmeterError, RetrieverError
from ragmeter.evaluation.explain.ceiling import knob_ceilings
from ragmeter.evaluation.explain.context import Context
from ragmeter.evaluation.explain.model import Cause, Explanation, MissExplanation
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.pipelines.chunkers import ChunkerConfig

__all__ = [
    "DEFAULT_DEPTH",
    "ExplainOptions",
    "explain_run",
    "rewriter_from_file",
    "stored_explanation",
]

#: How many hits the run's retriever is asked for again (``--depth``).
DEFAULT_DEPTH = 50
_NEEDS_CORPUS = "needs --corpus (the run searched no corpus ragmeter knows)"

Progress = Callable[[int, int, Any], None]


@dataclass(frozen=True)
class ExplainOptions:
    """How :func:`explain_run` probes a run: ``ragmeter explain``'s options as one value.

    ``depth``: hits the run's retriever is asked for again (above the run's k).
    ``corpus`` is searched by the reference probes (BM25, dense when ``dense`` and a model
    is installed, RM3) when the run did not search one. ``retriever`` replaces a spec whose
    secrets were hidden, or is the object itself for a run evaluated from Python;
    ``retriever_options`` are the adapter options the run did not store (``headers``,
    ``http_preset``, ``hits_path``…), as ``eval`` took them. ``verify`` runs each knob
    ragmeter can run and counts what it recovers and loses (``cross_encoder``: a local
    model folder for the re-ranking knob). ``rewriter`` (e.g.
    :class:`~ragmeter.pipelines.rewrite.LLMExpansion`, or :func:`rewriter_from_file`)
    replaces RM3 in the vocabulary probe. ``save=False`` stores nothing.

    >>> ExplainOptions(depth=20, dense=False).verify
    False
    """

    depth: int = DEFAULT_DEPTH
    corpus: str | Path | Corpus | None = None
    retriever: Any = None
    cache_dir: Path | None = None
    concurrency: int = 8
    dense: bool = True
    verify: bool = False
    cross_encoder: str | Path | None = None
    save: bool = True
    retriever_options: Mapping[str, Any] | None = None
    rewriter: Any = None


def explain_run(
    store: Any,
    run_ref: int | str,
    options: ExplainOptions | None = None,
    *,
    progress: Progress | None = None,
    **keywords: Any,
) -> Explanation:
    """Explain every retrieval miss of a stored run, with evidence; store it with the run.

    The run's retriever is rebuilt from its record and asked again, deeper, for the missed
    questions only; the reference probes, the knob ceilings and ``verify`` are as
    ``options`` (:class:`ExplainOptions`) says. ``progress`` is called as
    ``progress(done, total, stage)`` for each stage ("asking again", "probing").
    ``ExplainOptions``' fields given as keywords (``explain_run(store, run, depth=20)``)
    still work, with a ``DeprecationWarning``, until 0.2.0.

    >>> from ragmeter.store import Store
    >>> explanation = explain_run(Store.open("runs.db"), "latest")  # doctest: +SKIP
    >>> [m.why() for m in explanation.misses][:1]  # doctest: +SKIP
    ['ranked too low: first covering unit at rank 14 of 50 (asked again for 50)']
    """
    options = options or ExplainOptions()
    if keywords:
        warnings.warn(
            "explain_run(store, run, "
            + ", ".join(f"{name}=..." for name in keywords)
            + ") is deprecated since 0.1.0 and goes in 0.2.0: pass "
            "explain_run(store, run, ExplainOptions(...)) instead",
            DeprecationWarning,
            stacklevel=2,
        )
        options = replace(options, **keywords)
    return _explain(store, run_ref, options, progress)


def _explain(
    store: Any, run_ref: int | str, options: ExplainOptions, progress: Progress | None
) -> Explanation:
    depth, verify = options.depth, options.verify
    started = time.perf_counter()
    run = store.get_run(run_ref)
    if depth <= run.k:
        raise ConfigError(f"--depth {depth} must be above the run's k ({run.k})")
    from ragmeter.evaluation.report import build_report

    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    report = build_report(store, run.id, gold=gold)
    skipped: dict[str, str] = {}
    notes: list[str] = []
    built = _rebuild(run, options, skipped)
    try:
        ctx = _context(report, gold, built, options, progress)
        if options.corpus is not None and ctx.corpus is not None:
            notes.append(f"the reference probes searched --corpus {ctx.corpus.path}")
        misses = _explain_misses(ctx, options, skipped, notes)
        evaluated = [row for row in report.rows if row.error is None]
        n_hits = sum(row.hit for row in evaluated)
        knobs = knob_ceilings(
            misses,
            k=run.k,
            n_evaluated=len(evaluated),
            n_hits=n_hits,
            tags={t.tag: (t.n, t.misses) for t in report.by_tag},
        )
        checked: list[dict[str, Any]] = []
        if verify:
            from ragmeter.evaluation.explain.verify import verify_knobs

            checked = verify_knobs(
                ctx,
                [m.item_id for m in misses],
                {c.knob: c.items for c in knobs},
                depth=depth,
                cross_encoder=options.cross_encoder,
                dense=options.dense,
            )
    finally:
        if built is not None:
            built.close()
    explanation = Explanation(
        run_id=run.id,
        k=run.k,
        level=run.level,
        depth=depth,
        metric=f"hit@{run.k}",
        n_evaluated=len(evaluated),
        n_hits=n_hits,
        misses=misses,
        knobs=knobs,
        skipped=skipped,
        notes=notes,
        verify=checked,
        seconds=round(time.perf_counter() - started, 3),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if options.save:
        store.save_explanation(run.id, explanation.to_dict())
    return explanation


def rewriter_from_file(path: str | Path) -> Any:
    """The rewriter of a pipeline file's ``rewrite`` section (``method: llm`` or ``rm3``),
    for the vocabulary probe; RM3 needs the run's corpus, so only ``llm`` is built here."""
    from ragmeter.pipelines._config import llm_settings
    from ragmeter.pipelines.pipeline import load_pipeline_file
    from ragmeter.pipelines.rewrite import LLMExpansion

    section = load_pipeline_file(path).rewrite
    if section is None or section["method"] != "llm":
        raise ConfigError(
            f"--rewriter {path}: needs a rewrite section with method: llm (RM3 is the default)"
        )
    return LLMExpansion(llm_settings(section["llm"]))


def stored_explanation(store: Any, run_id: int) -> Explanation | None:
    """The explanation stored with run ``run_id`` by ``explain``, if any."""
    data = store.explanation(run_id)
    return Explanation.from_dict(data) if data is not None else None


def _rebuild(run: Any, options: ExplainOptions, skipped: dict[str, str]) -> Any:
    """The run's retriever built from its record, or None (the reason in ``skipped``)."""
    from ragmeter.evaluation.jobs import rebuild_retriever

    retriever = options.retriever
    if retriever is not None and not isinstance(retriever, str):
        return None
    try:
        return rebuild_retriever(
            run, cache_dir=options.cache_dir, retriever=retriever,
            options=options.retriever_options,
        )  # fmt: skip
    except (ConfigError, RetrieverError, ImportError) as error:
        skipped["depth"] = f"the run's retriever {run.retriever} could not be rebuilt: {error}"
        return None


def _context(
    report: Any, gold: GoldSet, built: Any, options: ExplainOptions, progress: Progress | None
) -> Context:
    from ragmeter.evaluation.scoring import Judgments
    from ragmeter.retrievers import as_retriever

    corpus, retriever = options.corpus, options.retriever

    run = report.run
    loaded: Corpus | None = None
    if corpus is not None:
        loaded = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    elif built is not None:
        loaded = built.corpus
    asked = built.retriever if built is not None else None
    if asked is None and retriever is not None and not isinstance(retriever, str):
        asked = as_retriever(retriever)
    inventory = built.chunks if built is not None else None
    judgments = Judgments.build(
        gold,
        run.level,
        chunks=inventory,
        documents=loaded.documents if loaded is not None else None,
    )
    ctx = Context(
        report=report,
        gold=gold,
        judgments=judgments,
        retriever=asked,
        corpus=loaded,
        chunker=ChunkerConfig.from_dict(run.config.get("chunker") or {}),
        chunks=None,
        cache_dir=options.cache_dir,
        concurrency=options.concurrency,
        progress=progress,
    )
    if ctx.reference is not None and built is not None:
        ctx.chunks = inventory  # the run's own chunks: a reference pipeline's index
    return ctx


def _searchers(ctx: Context, dense: bool, skipped: dict[str, str]) -> dict[str, Any]:
    """The reference retrievers the run does not already use, by name."""
    out: dict[str, Any] = {}
    if ctx.reference in ("bm25", "hybrid"):
        skipped["bm25"] = "the run's retriever already searches with BM25"
    else:
        out["bm25"] = ctx.bm25()
    if not dense:
        skipped["dense"] = "not asked (--no-dense)"
    elif ctx.reference in ("dense", "hybrid"):
        skipped["dense"] = "the run's retriever already searches with dense embeddings"
    else:
        from ragmeter.pipelines._config import parse_dense

        stage = "dense index (embedded once, then cached)"
        if ctx.progress is not None:
            ctx.progress(0, 1, stage)
        try:
            out["dense"], _ = ctx.resources().dense(ctx.chunker, parse_dense(None, "explain"))
        except (RagmeterError, ImportError) as error:
            skipped["dense"] = f"no dense model available offline ({error})"
        if ctx.progress is not None:
            ctx.progress(1, 1, stage)
    return out


def _rechunker(ctx: Context, docs: Sequence[str]) -> Callable[[], tuple[Any, Any, int]]:
    """BM25 over the run's chunks with ``docs`` re-chunked smaller, built on first use."""
    from ragmeter.evaluation.explain.probes import rechunk_config
    from ragmeter.pipelines.bm25 import BM25Retriever
    from ragmeter.pipelines.chunkers import chunk_document

    config = rechunk_config(ctx.chunker)
    built: list[Any] = []

    def rechunked() -> tuple[Any, Any, int]:
        if not built and ctx.corpus is not None:
            corpus = ctx.corpus
            chunks = [c for c in ctx.chunks or () if c.doc_id not in set(docs)]
            for doc in docs:
                chunks += chunk_document(corpus.documents[doc], config)
            titles = {doc_id: d.title for doc_id, d in corpus.documents.items()}
            built.append(BM25Retriever(chunks, titles=titles))
        return built[0], config, len(docs)

    return rechunked


def _explain_misses(
    ctx: Context, options: ExplainOptions, skipped: dict[str, str], notes: list[str]
) -> list[MissExplanation]:
    from ragmeter.evaluation.explain import probes

    depth, rewriter = options.depth, options.rewriter

    items = [ctx.gold[m.id] for m in ctx.report.misses]
    asked: dict[str, list[Any]] = {}
    errors: dict[str, str] = {}
    if ctx.retriever is not None and items:
        asked, errors = probes.ask_again(ctx, items, depth)
        if getattr(ctx.retriever, "by_item_id", False):
            notes.append(
                f"{ctx.run.retriever}: a run file's rankings are fixed; the depth probe read "
                f"what the file holds for each question (up to {depth})"
            )
    elif ctx.retriever is None:
        skipped.setdefault("depth", "the run's retriever cannot be asked again")
    searchers: dict[str, Any] = {}
    rm3: Any = None
    rechunked: Callable[[], tuple[Any, Any, int]] | None = None
    if ctx.corpus is None:
        for probe in ("bm25", "dense", "vocabulary", "chunking"):
            skipped[probe] = _NEEDS_CORPUS
    else:
        searchers = _searchers(ctx, options.dense, skipped)
        pipeline = ctx.run.config.get("pipeline")
        if isinstance(pipeline, Mapping) and pipeline.get("rewrite"):
            skipped["vocabulary"] = "the run's pipeline rewrites queries already"
        elif ctx.reference is None and (
            ctx.retriever is None or getattr(ctx.retriever, "by_item_id", False)
        ):
            skipped["vocabulary"] = "the run's retriever cannot be asked the rewritten query"
        elif rewriter is not None:
            rm3 = rewriter
        else:
            from ragmeter.pipelines.rewrite import RM3

            rm3 = RM3(ctx.bm25())
        if ctx.reference == "bm25" and ctx.plain_reference and ctx.chunks is not None:
            rechunked = _rechunker(ctx, probes.rechunk_candidates(ctx, items))
        else:
            skipped["chunking"] = (
                "re-chunking needs a reference BM25 run (the probe re-indexes one document)"
            )
    returned = {h.doc for r in ctx.results.values() for h in r.hits}
    returned |= {h.doc for hits in asked.values() for h in hits}
    found = _Found(depth, asked, errors, searchers, rm3, rechunked, returned)
    out: list[MissExplanation] = []
    for done, item in enumerate(items, start=1):
        out.append(_one(ctx, item, found))
        if ctx.progress is not None:
            ctx.progress(done, len(items), "probing")
    return out


@dataclass(frozen=True)
class _Found:
    """What the probes share over every miss: the answers asked again (and their errors),
    the reference searchers, the query rewriter, the re-chunked index and every document
    the run (or its asking again) returned."""

    depth: int
    asked: Mapping[str, list[Any]]
    errors: Mapping[str, str]
    searchers: Mapping[str, Any]
    rm3: Any
    rechunked: Callable[[], tuple[Any, Any, int]] | None
    returned: set[str]


def _one(ctx: Context, item: GoldItem, shared: _Found) -> MissExplanation:
    from ragmeter.evaluation.explain import probes

    depth, asked, errors, searchers = shared.depth, shared.asked, shared.errors, shared.searchers
    rm3, rechunked, returned = shared.rm3, shared.rechunked, shared.returned

    causes: list[Cause | None] = []
    notes: list[str] = []
    hits = asked.get(item.id)
    if item.id in errors:
        notes.append(f"asking again failed: {errors[item.id]}")
    causes.append(probes.not_in_index(ctx, item, hits, depth, returned))
    run_rank: int | None = None
    if hits is not None:
        found = ctx.covering(item, hits)
        run_rank = found.rank if found is not None else None
        if found is not None and found.rank <= ctx.k:
            notes.append(
                f"asked again, the retriever returned a covering unit at rank {found.rank} "
                f"(within k={ctx.k}): its answers changed since the run"
            )
        if 0 < len(hits) < depth and getattr(ctx.retriever, "by_item_id", False):
            notes.append(f"the run file holds {len(hits)} hits for this question")
        causes.append(probes.ranked_too_low(ctx, item, hits, depth))
    causes.extend(
        probes.other_retrievers(
            ctx, item, run_rank, searchers, asked=hits is not None,
            own=lambda: _own_ranking(ctx, item, hits, errors),
        )
    )  # fmt: skip
    if rm3 is not None:
        causes.append(probes.vocabulary(ctx, item, ctx.bm25(), rm3))
    if rechunked is not None:
        causes.append(probes.chunking(ctx, item, rechunked))
    causes.append(probes.gold_may_be_wrong(ctx, item))
    return MissExplanation(
        item.id, item.question, list(item.tags), [c for c in causes if c is not None], notes
    )


def _own_ranking(
    ctx: Context, item: GoldItem, hits: Sequence[Any] | None, errors: Mapping[str, str]
) -> list[Any]:
    """The run's ranking the hybrid knob would fuse: asked again to the fusion depth when the
    retriever can be asked (a run file gives what it holds), else the deepest list at hand."""
    from ragmeter.evaluation.explain import probes

    want = probes.fusion_depth(ctx.k)
    if hits is not None and len(hits) >= want:
        return list(hits[:want])
    if ctx.retriever is not None and item.id not in errors:
        try:
            return probes.ask_question(ctx.retriever, item.question, want, item.id)
        except RagmeterError:
            pass
    if hits is not None:
        return list(hits)
    result = ctx.results.get(item.id)
    return list(result.hits) if result is not None else []
