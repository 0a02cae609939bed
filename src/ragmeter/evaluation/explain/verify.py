"""``explain --verify``: run each knob ragmeter can run itself and count what it changes.

Each knob is run through ``evaluate()`` — the same code path as ``ragmeter eval`` — over
the run's missed questions (how many it *recovered*) and over the questions the run found
(how many it *lost*); ``dense=False`` leaves out the knobs that need a dense model. For a
reference BM25 run the knob is a reference pipeline, the one a
pipeline file would build:

- query rewriting: ``{retriever: bm25, rewrite: {method: rm3}}`` with the run's chunker;
- chunking: ``{retriever: bm25}`` with the smaller structure-aware chunker;
- hybrid search: ``{retriever: hybrid}`` (needs a dense model);
- re-ranking: ``{retriever: bm25, rerank: {top_n: DEPTH, cross_encoder: FOLDER}}``.

For any other retriever the knob wraps the run's retriever: RRF of it and the reference
BM25 (hybrid), the RM3-expanded question (rewriting), a cross-encoder over its top DEPTH
(re-ranking). Chunking needs a reference pipeline (ragmeter cannot re-chunk your index).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter.evaluation.explain.context import Context
from ragmeter.gold.goldset import GoldSet

__all__ = ["knob_pipelines", "verify_knobs"]


def knob_pipelines(
    ctx: Context, depth: int, cross_encoder: str | Path | None, *, dense: bool = True
) -> dict[str, dict[str, Any]]:
    """Pipeline-file sections of each knob, for a plain reference BM25 run (else empty)."""
    from ragmeter.evaluation.explain.probes import rechunk_config

    if ctx.reference != "bm25" or not ctx.plain_reference:
        return {}
    base = {"retriever": "bm25", "chunker": ctx.chunker.to_dict()}
    out: dict[str, dict[str, Any]] = {
        "query rewriting": {**base, "rewrite": {"method": "rm3"}},
        "chunking": {**base, "chunker": rechunk_config(ctx.chunker).to_dict()},
    }
    if dense:
        out["hybrid search"] = {**base, "retriever": "hybrid"}
    if cross_encoder is not None:
        out["re-ranking"] = {
            **base,
            "rerank": {"top_n": depth, "cross_encoder": str(cross_encoder)},
        }
    return out


def _wrapped(ctx: Context, knob: str, depth: int, cross_encoder: str | Path | None) -> Any:
    """The knob around the run's own retriever, as a ``(question, k) -> hits`` callable."""
    from ragmeter.evaluation.explain.probes import ask_question

    if knob == "hybrid search":
        from ragmeter.pipelines._config import FUSION_DEFAULTS
        from ragmeter.pipelines.hybrid import rrf

        bm25, fusion = ctx.bm25(), int(FUSION_DEFAULTS["depth"])

        def hybrid(question: str, k: int) -> list[Any]:
            mine = ask_question(ctx.retriever, question, fusion)
            return rrf([mine, bm25.retrieve(question, fusion)], int(FUSION_DEFAULTS["k"]))[:k]

        return hybrid
    if knob == "query rewriting":
        from ragmeter.pipelines.rewrite import RM3

        rm3 = RM3(ctx.bm25())

        def rewritten(question: str, k: int) -> list[Any]:
            return ask_question(ctx.retriever, rm3.rewrite(question).text, k)

        return rewritten
    from ragmeter.pipelines.rerank import CrossEncoderReranker, rerank_top

    reranker: Any = CrossEncoderReranker(str(cross_encoder))

    def reranked(question: str, k: int) -> list[Any]:
        hits = ask_question(ctx.retriever, question, depth)
        return rerank_top(reranker, question, hits, depth)[:k]

    return reranked


def _knobs(
    ctx: Context, depth: int, cross_encoder: str | Path | None, dense: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """knob -> what ``evaluate()`` is given; knob -> why it cannot be run."""
    from ragmeter.errors import RagmeterError
    from ragmeter.pipelines.pipeline import Pipeline, PipelineConfig

    runnable: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    if ctx.corpus is None:
        return {}, {"all": "needs --corpus (the reference pipelines search it)"}
    sections = knob_pipelines(ctx, depth, cross_encoder, dense=dense)
    if sections:
        for knob, data in sections.items():
            try:
                config = PipelineConfig.from_dict(data, source=f"explain --verify ({knob})")
                runnable[knob] = Pipeline(config, ctx.corpus, resources=ctx.resources())
            except (RagmeterError, ImportError) as error:
                skipped[knob] = str(error)
        if cross_encoder is None:
            skipped["re-ranking"] = "needs --cross-encoder FOLDER (a local cross-encoder model)"
        if not dense:
            skipped["hybrid search"] = "needs the dense retriever (--no-dense)"
        return runnable, skipped
    if ctx.retriever is None:
        return {}, {"all": "the run's retriever could not be rebuilt"}
    skipped["chunking"] = "needs a reference BM25 run: ragmeter cannot re-chunk your index"
    knobs = ["hybrid search", "query rewriting"]
    if cross_encoder is not None:
        knobs.append("re-ranking")
    else:
        skipped["re-ranking"] = "needs --cross-encoder FOLDER (a local cross-encoder model)"
    for knob in knobs:
        try:
            runnable[knob] = _wrapped(ctx, knob, depth, cross_encoder)
        except (RagmeterError, ImportError) as error:
            skipped[knob] = str(error)
    return runnable, skipped


def _hits(gold: GoldSet, retriever: Any, ctx: Context) -> dict[str, bool]:
    """Which questions of ``gold`` the knob finds, scored as ``eval`` scores them (with the
    corpus documents, so quotes are located as in an ``eval --corpus``)."""
    from ragmeter.evaluation.evaluate import evaluate
    from ragmeter.evaluation.setup import RetrieverSetup

    if not len(gold):
        return {}
    setup = RetrieverSetup(
        retriever,
        chunks=getattr(retriever, "chunks", None),
        documents=ctx.corpus.documents if ctx.corpus is not None else None,
    )
    report = evaluate(
        gold, setup, k=ctx.k, level=ctx.run.level, concurrency=ctx.concurrency,
        name="explain-verify",
    )  # fmt: skip
    return {row.id: row.hit for row in report.rows if row.error is None}


def verify_knobs(
    ctx: Context,
    missed: Sequence[str],
    predicted: Mapping[str, Sequence[str]],
    *,
    depth: int,
    cross_encoder: str | Path | None = None,
    dense: bool = True,
) -> list[dict[str, Any]]:
    """Per knob: misses predicted to recover, misses actually recovered, found questions lost.

    ``missed`` are the run's missed question ids; ``predicted`` maps a knob to the misses
    its probes said it recovers. Knobs that cannot run say why (``skipped``).
    """
    runnable, skipped = _knobs(ctx, depth, cross_encoder, dense)
    found = [row.id for row in ctx.report.rows if row.error is None and row.hit]
    miss_gold = _subset(ctx.gold, missed)
    found_gold = _subset(ctx.gold, found)
    out: list[dict[str, Any]] = []
    for knob, retriever in runnable.items():
        now_missed = _hits(miss_gold, retriever, ctx)
        now_found = _hits(found_gold, retriever, ctx)
        recovered = sorted(i for i, hit in now_missed.items() if hit)
        lost = sorted(i for i, hit in now_found.items() if not hit)
        expected = list(predicted.get(knob, ()))
        out.append({
            "knob": knob, "predicted": len(expected), "recovered": len(recovered),
            "recovered_predicted": len(set(recovered) & set(expected)),
            "lost": len(lost), "misses": len(missed), "found": len(found),
            "recovered_items": recovered, "lost_items": lost,
        })  # fmt: skip
    out.extend({"knob": knob, "skipped": reason} for knob, reason in skipped.items())
    return out


def _subset(gold: GoldSet, ids: Sequence[str]) -> GoldSet:
    wanted = set(ids)
    return GoldSet([item for item in gold if item.id in wanted], name=gold.name)
