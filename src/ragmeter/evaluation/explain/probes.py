"""The probes: each asks one question of the evidence and returns a cause only when it shows one.

- :func:`ask_again` — the run's retriever, asked again for ``depth`` hits (missed questions only);
- :func:`ranked_too_low` — a covering unit at rank r > k in that deeper list (re-ranking);
- :func:`other_retrievers` — reference BM25 / dense over the corpus rank one within k, with
  where RRF of that ranking and the run's puts it (hybrid recovers it only within k);
- :func:`vocabulary` — almost no stemmed content word shared with the gold passage, and RM3
  expansion brings a covering unit into the top k (query rewriting);
- :func:`chunking` — the gold passage cut by a chunk boundary or lost in a much larger chunk,
  and a smaller structure-aware re-chunk of that document puts it in the top k (chunking);
- :func:`gold_may_be_wrong` — a top-k chunk that is not gold contains an expected answer;
- :func:`not_in_index` — the gold document is not in the corpus/index, or never came back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ragmeter.documents import Chunk, Hit
from ragmeter.evaluation.explain.context import Context
from ragmeter.evaluation.explain.model import Cause
from ragmeter.gold.goldset import GoldItem

__all__ = [
    "CHUNK_TO_PASSAGE",
    "VOCABULARY_MAX_OVERLAP",
    "ask_again",
    "ask_question",
    "chunking",
    "fusion_depth",
    "gold_may_be_wrong",
    "not_in_index",
    "other_retrievers",
    "ranked_too_low",
    "rechunk_candidates",
    "rechunk_config",
    "vocabulary",
]

#: "Almost no shared word": at most this share of the question's stemmed content words
#: appears in the gold passage (the best-matching passage, when there are several).
VOCABULARY_MAX_OVERLAP = 0.2
#: "A chunk much larger than the passage": the chunk is at least this many times longer.
CHUNK_TO_PASSAGE = 4
#: Smallest chunk size the re-chunk probe tries (characters).
MIN_RECHUNK_SIZE = 200


def ask_again(
    ctx: Context, items: Sequence[GoldItem], depth: int
) -> tuple[dict[str, list[Hit]], dict[str, str]]:
    """The run's retriever asked again for ``depth`` hits: hits and errors by item id."""
    from ragmeter.evaluation.evaluate import retrieval_work
    from ragmeter.executors.local import run_concurrently

    work, is_async = retrieval_work(ctx.retriever, depth)
    hits: dict[str, list[Hit]] = {}
    errors: dict[str, str] = {}
    done = 0

    def on_outcome(outcome: Any) -> None:
        nonlocal done
        done += 1
        if outcome.error is not None:
            errors[outcome.item.id] = str(outcome.error)
        else:
            hits[outcome.item.id] = list(outcome.value.hits)
        if ctx.progress is not None:
            ctx.progress(done, len(items), "asking again")

    run_concurrently(
        list(items),
        work,
        concurrency=ctx.concurrency,
        on_outcome=on_outcome,
        is_async=is_async,
    )
    return hits, errors


def ranked_too_low(ctx: Context, item: GoldItem, hits: Sequence[Hit], depth: int) -> Cause | None:
    """A covering unit below the top k when asked for ``depth`` hits."""
    found = ctx.covering(item, hits)
    if found is None or found.rank <= ctx.k:
        return None
    return Cause(
        "ranked_too_low",
        f"first covering unit at rank {found.rank} of {len(hits)} (asked again for {depth})",
        {"rank": found.rank, "depth": depth, "returned": len(hits), "chunk": found.hit.id,
         "doc": found.hit.doc},
    )  # fmt: skip


def fusion_depth(k: int) -> int:
    """How deep each ranking goes into the hybrid knob's RRF: ``max(k, fusion.depth)``, as the
    ``hybrid`` pipeline asks each retriever (and ``--verify`` asks the run's)."""
    from ragmeter.pipelines._config import FUSION_DEFAULTS

    return max(k, int(FUSION_DEFAULTS["depth"]))


def other_retrievers(
    ctx: Context,
    item: GoldItem,
    run_rank: int | None,
    searchers: Mapping[str, Any],
    *,
    asked: bool = True,
    own: Callable[[], Sequence[Hit]] | None = None,
) -> list[Cause]:
    """One cause per reference retriever (``name -> index``) ranking a covering unit in the top k.

    ``run_rank`` is the run retriever's rank of its first covering unit when asked again
    (``None``: not within the depth asked); ``asked`` is False when it was not asked again.
    ``own()`` is the run's own ranking (to :func:`fusion_depth` when it can be asked): it is
    fused with the other retriever's by the hybrid pipeline's RRF (the run's list first, as
    ``--verify`` fuses), and ``fused_rank`` in the evidence is where the first covering unit
    lands (``None``: not in the fused list). Only a fused rank within k counts as a miss
    the hybrid knob recovers (:func:`~ragmeter.evaluation.explain.ceiling.knob_ceilings`).
    """
    from ragmeter.pipelines.hybrid import RRF_K, rrf

    out: list[Cause] = []
    mine: list[Hit] | None = None
    for name, index in searchers.items():
        theirs_list = list(index.retrieve(item.question, fusion_depth(ctx.k)))
        found = ctx.covering(item, theirs_list[: ctx.k])
        if found is None:
            continue
        if mine is None:
            mine = list(own()) if own is not None else []
        fused = ctx.covering(item, rrf([mine, theirs_list], RRF_K))
        fused_rank = fused.rank if fused is not None else None
        theirs = (
            f"rank {run_rank}"
            if run_rank is not None
            else ("not in its deeper list" if asked else "not asked again")
        )
        fused_at = f"rank {fused_rank}" if fused_rank is not None else "not in the fused list"
        out.append(
            Cause(
                "other_retriever",
                f"{name} ranks a covering unit at {found.rank} (the run's retriever: {theirs}); "
                f"RRF of the two: {fused_at}",
                {
                    "retriever": name,
                    "rank": found.rank,
                    "run_rank": run_rank,
                    "chunk": found.hit.id,
                    "doc": found.hit.doc,
                    "fused_rank": fused_rank,
                    "fused_depth": [len(mine), len(theirs_list)],
                },
            )  # fmt: skip
        )
    return out


def content_overlap(tokenize: Callable[[Sequence[str]], list[list[str]]], question: str,
                    passages: Sequence[str]) -> tuple[float, list[str], int] | None:  # fmt: skip
    """The best share of the question's stemmed content words found in one passage,
    those shared words, and how many content words the question has (None: none/no passage).
    """
    question_terms = set(tokenize([question])[0])
    if not question_terms or not passages:
        return None
    best: tuple[float, list[str], int] | None = None
    for terms in tokenize(list(passages)):
        shared = sorted(question_terms & set(terms))
        share = len(shared) / len(question_terms)
        if best is None or share > best[0]:
            best = (share, shared, len(question_terms))
    return best


def vocabulary(ctx: Context, item: GoldItem, bm25: Any, rm3: Any) -> Cause | None:
    """Almost no shared content word, and the expanded query finds a covering unit.

    ``rm3`` is the rewriter: RM3 by default, or the one configured (an LLM). A reference
    BM25 run is asked with RM3's weighted terms (as its ``rewrite: rm3`` stage would); any
    other retriever, or a rewrite without weights, is asked again with the expanded text.
    """
    overlap = content_overlap(bm25.tokenize, item.question, ctx.passage_texts(item))
    if overlap is None or overlap[0] > VOCABULARY_MAX_OVERLAP:
        return None
    share, shared, n_terms = overlap
    rewritten = rm3.rewrite(item.question)
    if ctx.reference == "bm25" and ctx.plain_reference and rewritten.terms is not None:
        hits = bm25.retrieve_weighted(rewritten.terms, ctx.k)
    else:
        hits = ask_question(ctx.retriever, rewritten.text, ctx.k, item.id)
    found = ctx.covering(item, hits)
    if found is None:
        return None
    words = ", ".join(shared) if shared else "none"
    name = str(getattr(rm3, "config", {}).get("method", "rm3"))
    return Cause(
        "vocabulary",
        f"{len(shared)} of {n_terms} question words in the gold passage ({words}); "
        f"the {name.upper()}-expanded query ranks a covering unit at {found.rank}",
        {"overlap": round(share, 3), "shared": shared, "question_terms": n_terms,
         "rewriter": name, "rewritten": rewritten.text, "rank": found.rank,
         "chunk": found.hit.id},
    )  # fmt: skip


def ask_question(retriever: Any, question: str, k: int, item_id: str = "explain") -> list[Hit]:
    """``retriever`` asked ``question`` for ``k`` hits, the way ``evaluate()`` asks it."""
    from ragmeter.evaluation.evaluate import retrieval_work

    work, is_async = retrieval_work(retriever, k)
    asked = GoldItem.model_construct(id=item_id, question=question, relevant=[])
    if is_async:
        import asyncio

        return list(asyncio.run(work(asked)).hits)
    return list(work(asked).hits)


def rechunk_config(run_chunker: Any) -> Any:
    """The smaller, structure-aware chunker the chunking probe tries: Markdown sections of
    half the run's size (whole documents: 800 characters), at least 200.

    >>> from ragmeter.pipelines.chunkers import ChunkerConfig
    >>> rechunk_config(ChunkerConfig(kind="fixed", size=1000)).key()
    'markdown(size=500,overlap=50,min_size=62)@v2'
    """
    from ragmeter.pipelines.chunkers import ChunkerConfig

    size = 800 if run_chunker.kind == "none" else max(MIN_RECHUNK_SIZE, run_chunker.size // 2)
    if run_chunker.unit != "chars":
        size = 800
    return ChunkerConfig(kind="markdown", size=size)


def _boundary(chunks: Sequence[Chunk], span: tuple[int, int]) -> dict[str, Any] | None:
    """Why the chunks of one document fit the passage ``span`` badly, or None."""
    start, end = span
    touching = [c for c in chunks if c.start < end and start < c.end]
    whole = [c for c in touching if c.start <= start and end <= c.end]
    spans = [{"chunk": c.id, "start": c.start, "end": c.end} for c in touching]
    if touching and not whole:
        cuts = sorted({c.end for c in touching if start < c.end < end}
                      | {c.start for c in touching if start < c.start < end})  # fmt: skip
        return {"reason": "cut", "passage": [start, end], "chunks": spans, "boundaries": cuts}
    smallest = min(whole, key=lambda c: c.end - c.start, default=None)
    if smallest is not None and (smallest.end - smallest.start) >= CHUNK_TO_PASSAGE * (end - start):
        return {"reason": "large", "passage": [start, end], "chunks": spans,
                "chunk_chars": smallest.end - smallest.start, "passage_chars": end - start}  # fmt: skip
    return None


def _badly_cut(ctx: Context, item: GoldItem) -> list[tuple[Any, tuple[int, int], dict[str, Any]]]:
    """The quoted passages of ``item`` that the run's chunks fit badly: (entry, span, why)."""
    if ctx.judgments.level == "doc" or ctx.corpus is None:
        return []  # at doc level any chunk of the document counts: no boundary can matter
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in ctx.chunks or ():
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    spans = ctx.quote_spans()
    out = []
    for index, rel in enumerate(item.relevant):
        span = spans.get((item.id, index))
        if rel.grade <= 0 or rel.quote is None or rel.doc is None or span is None:
            continue
        fit = _boundary(by_doc.get(rel.doc, []), span)
        if fit is not None:
            out.append((rel, span, fit))
    return out


def rechunk_candidates(ctx: Context, items: Sequence[GoldItem]) -> list[str]:
    """The documents whose gold passages the run's chunks cut or drown, in item order."""
    return list(dict.fromkeys(rel.doc for item in items for rel, _, _ in _badly_cut(ctx, item)))


def chunking(
    ctx: Context, item: GoldItem, rechunked: Callable[[], tuple[Any, Any, int]]
) -> Cause | None:
    """A quoted passage cut by a boundary or lost in a large chunk, and the index with its
    document re-chunked (``rechunked() -> (bm25 index, chunker config, documents
    re-chunked)``: every candidate document at once, built once) finds it in the top k."""
    for rel, span, fit in _badly_cut(ctx, item):
        bm25, config, n_docs = rechunked()
        found = ctx.covering(item, bm25.retrieve(item.question, ctx.k))
        if found is None:
            continue
        if fit["reason"] == "cut":
            how = f"passage {span[0]}–{span[1]} of {rel.doc} cut at {fit['boundaries']}"
        else:
            how = (f"passage of {fit['passage_chars']} chars inside a chunk of "
                   f"{fit['chunk_chars']}")  # fmt: skip
        return Cause(
            "chunking",
            f"{how}; re-chunked ({config.key()}) it ranks at {found.rank}",
            {**fit, "doc": rel.doc, "rechunk": config.to_dict(), "rank": found.rank,
             "chunk": found.hit.id, "rechunked_docs": n_docs},
        )  # fmt: skip
    return None


def gold_may_be_wrong(ctx: Context, item: GoldItem) -> Cause | None:
    """A top-k chunk that is not gold but contains an ``answer_contains`` string."""
    from ragmeter.evaluation.hit_text import stored_text
    from ragmeter.gold.answers import answer_matches

    result = ctx.results.get(item.id)
    if not item.answer_contains or result is None:
        return None
    grades = list(result.extra.get("grades") or [])
    inventory = {c.id: c.text for c in ctx.chunks or ()}
    for rank, hit in enumerate(result.hits[: ctx.k], start=1):
        if rank - 1 < len(grades) and grades[rank - 1] > 0:
            continue
        stored, source, _ = stored_text(result.extra, rank)
        text = stored if source == "run" else inventory.get(hit.id)
        if not text:
            continue
        for pattern in item.answer_contains:
            quote = _matched(text, pattern)
            if quote is None or not answer_matches(text, [pattern]):
                continue
            suggestion = {"run": str(ctx.run.id), "item_id": item.id, "action": "relevant",
                          "doc": hit.doc, "chunk": hit.id, "grade": 1, "quote": quote}  # fmt: skip
            return Cause(
                "gold_may_be_wrong",
                f"rank {rank} ({hit.id}) is not gold but contains “{quote}”: mark it relevant?",
                {"rank": rank, "chunk": hit.id, "doc": hit.doc, "answer": pattern},
                suggestion,
            )
    return None


def _matched(text: str, pattern: str) -> str | None:
    """The text of ``text`` that ``pattern`` matched (case as in the chunk), or None."""
    import re

    if pattern.startswith("re:"):
        match = re.search(pattern[3:], text, re.IGNORECASE)
        return match.group(0) if match else None
    words = [re.escape(w) for w in pattern.split()]
    match = re.search(r"\s+".join(words), text, re.IGNORECASE) if words else None
    return match.group(0) if match else pattern


def not_in_index(
    ctx: Context,
    item: GoldItem,
    asked: Sequence[Hit] | None,
    depth: int,
    returned_docs: Collection[str],
) -> Cause | None:
    """The gold documents that cannot be found: absent from the corpus or index, or — for a
    retriever whose index ragmeter cannot see — never returned (in no stored ranking of the
    run and no deeper list explain asked for)."""
    wanted = list(dict.fromkeys(rel.doc_id for rel in item.relevant if rel.grade > 0))
    if ctx.corpus is not None:
        absent = [d for d in wanted if d not in ctx.corpus.documents]
        if absent:
            return Cause(
                "not_in_index",
                f"{', '.join(absent)} not in the corpus {ctx.corpus.path}",
                {
                    "docs": absent,
                    "reason": "absent from the corpus",
                    "corpus": str(ctx.corpus.path),
                },
            )
    if ctx.chunks is not None:
        indexed = {c.doc_id for c in ctx.chunks}
        empty = [d for d in wanted if d not in indexed]
        if empty:
            return Cause(
                "not_in_index",
                f"no chunk of {', '.join(empty)} in the index (nothing left after chunking)",
                {"docs": empty, "reason": "no chunk in the index"},
            )
        return None  # the run's index is known and holds every gold document
    if asked is None or ctx.covering(item, asked) is not None:
        return None
    seen = set(returned_docs) | {h.doc for h in asked}
    never = [d for d in wanted if d not in seen]
    if never and len(never) == len(wanted):
        n = len(ctx.results)
        return Cause(
            "not_in_index",
            f"{', '.join(never)} never returned: in no stored ranking of the run's {n} "
            f"questions and no top {depth} asked again",
            {"docs": never, "reason": "never returned", "depth": depth, "questions": n},
        )
    return None
