"""``ragmeter explain``: every miss's causes with evidence, hand-built per cause (issue 28)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import ragmeter
from ragmeter.corpus import load_corpus
from ragmeter.evaluation.explain import ExplainOptions, Explanation, explain_run, stored_explanation
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.jobs import run_job
from ragmeter.pipelines.bm25 import BM25Retriever
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus
from ragmeter.store import Store


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _gold(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    path = tmp_path / "gold.yaml"
    path.write_text(yaml.safe_dump(items), encoding="utf-8")
    return path


def _by_doc(ranking: dict[str, list[str]], texts: dict[str, str] | None = None) -> Any:
    """A retriever of fixed rankings: question -> documents, best first."""

    def search(question: str, k: int) -> list[dict[str, Any]]:
        docs = ranking.get(question, [])
        return [
            {"id": doc, "doc": doc, "text": (texts or {}).get(doc, f"text of {doc}")}
            for doc in docs[:k]
        ]

    return search


def _kinds(explanation: Explanation, item_id: str) -> list[str]:
    miss = explanation.of(item_id)
    assert miss is not None, f"{item_id} was not a miss"
    return miss.kinds


def test_ranked_too_low_states_the_rank_asked_again(store: Store) -> None:
    """Issue 28: a covering unit at rank 8 of a deeper list is *ranked too low*, rank 8."""
    docs = [f"d{i}" for i in range(1, 11)]
    gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "where?", "relevant": ["d8"]}])
    search = _by_doc({"where?": docs})
    run = ragmeter.evaluate(gold, search, k=5, store=store).run
    explanation = explain_run(
        store, run.id, ExplainOptions(retriever=search, depth=20, dense=False)
    )
    (miss,) = explanation.misses
    assert miss.kinds == ["ranked_too_low"]
    assert miss.causes[0].evidence["rank"] == docs.index("d8") + 1 == 8
    assert miss.causes[0].knob == "re-ranking"
    assert "bm25" in explanation.skipped and "--corpus" in explanation.skipped["bm25"]
    (knob,) = explanation.knobs
    assert (knob.knob, knob.recovered, knob.ceiling) == ("re-ranking", 1, 1.0)


def test_the_other_retriever_finds_it(tmp_path: Path, store: Store) -> None:
    """Issue 28: reference BM25 over --corpus ranks the gold document first where the
    run's retriever never did: *the other retriever finds it*, with both ranks."""
    corpus = _write(tmp_path / "docs", {
        "refunds.md": "Refunds are paid within thirty days of the request.",
        "shipping.md": "Parcels ship from the warehouse on Mondays.",
        "hours.md": "The office opens at nine.",
    })  # fmt: skip
    gold = ragmeter.GoldSet.from_records([
        {"id": "q1", "question": "when are refunds paid", "relevant": ["refunds.md"]},
        {"id": "q2", "question": "refund policy", "relevant": ["refunds.md"]},
    ])  # fmt: skip
    search = _by_doc({"when are refunds paid": ["hours.md", "shipping.md"],
                      "refund policy": ["refunds.md"]})  # fmt: skip
    run = ragmeter.evaluate(gold, search, k=2, store=store).run
    explanation = explain_run(
        store,
        run.id,
        ExplainOptions(retriever=search, corpus=corpus, depth=5, dense=False, verify=True),
    )
    assert [m.item_id for m in explanation.misses] == ["q1"]
    assert _kinds(explanation, "q1") == ["other_retriever"]
    # --verify fuses your retriever with the reference BM25 (RRF): q1 comes back, q2 stays.
    (hybrid,) = [row for row in explanation.verify if row["knob"] == "hybrid search"]
    assert (hybrid["recovered_items"], hybrid["lost"]) == (["q1"], 0)
    cause = explanation.misses[0].causes[0]
    assert cause.evidence["retriever"] == "bm25"
    assert cause.evidence["rank"] == 1 and cause.evidence["run_rank"] is None
    assert cause.knob == "hybrid search"


def test_the_other_retriever_finds_it_but_rrf_does_not_bring_it_into_k(
    tmp_path: Path, store: Store
) -> None:
    """Issue 28: BM25 ranks the gold document within k, so the cause stands, but RRF of the
    run's ranking and BM25's puts the two documents both lists hold first: the hybrid
    knob does not count the miss, and --verify (the fusion run) does not recover it."""
    corpus = _write(tmp_path / "docs", {
        "refunds.md": "Refunds are paid within thirty days of the request.",
        "faq.md": "Refunds paid? Refunds are paid by bank transfer.",
        "shipping.md": "Parcels ship once they are paid for, from the warehouse on Mondays.",
        "hours.md": "Office hours are paid time for the staff who open at nine.",
    })  # fmt: skip
    gold = ragmeter.GoldSet.from_records(
        [{"id": "q1", "question": "when are refunds paid", "relevant": ["refunds.md"]}]
    )
    search = _by_doc({"when are refunds paid": ["shipping.md", "hours.md"]})
    run = ragmeter.evaluate(gold, search, k=2, store=store).run
    explanation = explain_run(
        store,
        run.id,
        ExplainOptions(retriever=search, corpus=corpus, depth=5, dense=False, verify=True),
    )
    assert "other_retriever" in _kinds(explanation, "q1")  # (and never returned by the run)
    (cause,) = [c for c in explanation.misses[0].causes if c.kind == "other_retriever"]
    bm25 = [h.doc for h in BM25Retriever(chunk_corpus(load_corpus(corpus), ChunkerConfig(kind="none")))
            .retrieve("when are refunds paid", 100)]  # fmt: skip
    assert cause.evidence["rank"] == bm25.index("refunds.md") + 1 <= 2
    # An independent RRF (k=60) by position: both run documents are in BM25's list too.
    mine = ["shipping.md", "hours.md"]
    score = {d: sum(1 / (60 + r.index(d) + 1) for r in (mine, bm25) if d in r) for d in bm25}
    fused = sorted(score, key=lambda d: (-score[d], (mine + bm25).index(d)))
    assert cause.evidence["fused_rank"] == fused.index("refunds.md") + 1 > 2
    assert "RRF of the two: rank" in cause.summary
    assert "hybrid search" not in [c.knob for c in explanation.knobs]
    (hybrid,) = [row for row in explanation.verify if row["knob"] == "hybrid search"]
    assert (hybrid["predicted"], hybrid["recovered"]) == (0, 0)


def test_vocabulary_mismatch_needs_no_shared_word_and_rm3_recovery(
    tmp_path: Path, store: Store
) -> None:
    """Issue 28: a question sharing no stemmed word with its gold passage, found once RM3
    expands it: *vocabulary mismatch*, overlap 0 and the rewritten rank."""
    corpus = _write(tmp_path / "docs", {
        "gloss.md": "A motor lubricant, to swap often, is the engine oil.",
        "car.md": "Change the engine oil every 5000 miles.",
        "noise.md": "Tyres wear faster in summer.",
    })  # fmt: skip
    gold = ragmeter.GoldSet.from_records([
        {"id": "q1", "question": "how often should I swap the motor lubricant",
         "relevant": ["car.md"]},
        {"id": "q2", "question": "oil miles", "relevant": ["car.md"]},
    ])  # fmt: skip
    texts = {p.name: p.read_text(encoding="utf-8") for p in corpus.iterdir()}

    def word_search(question: str, k: int) -> list[dict[str, Any]]:
        """Documents sharing a content word with the question, most shared first."""
        stop = {"the", "how", "should", "i", "a", "is", "to", "every", "in"}
        words = set(question.lower().replace(",", " ").split()) - stop
        scored = [(len(words & set(t.lower().replace(",", " ").replace(".", " ").split())), d)
                  for d, t in sorted(texts.items())]  # fmt: skip
        ranked = [d for n, d in sorted(scored, key=lambda s: -s[0]) if n > 0]
        return [{"id": d, "doc": d, "text": texts[d]} for d in ranked[:k]]

    run = ragmeter.evaluate(gold, word_search, k=2, store=store).run
    explanation = explain_run(
        store, run.id, ExplainOptions(retriever=word_search, corpus=corpus, depth=5, dense=False)
    )
    assert [m.item_id for m in explanation.misses] == ["q1"]
    assert _kinds(explanation, "q1") == ["vocabulary"]
    evidence = explanation.misses[0].causes[0].evidence
    assert evidence["overlap"] == 0.0 and evidence["shared"] == []
    assert evidence["rank"] <= 2 and "oil" in evidence["rewritten"]


def test_chunking_a_quote_cut_by_a_chunk_boundary(tmp_path: Path, store: Store) -> None:
    """Issue 28: a quoted passage split across two chunks, whole again in the smaller
    Markdown re-chunk, which ranks it first: *chunking*, with the boundary offset."""
    filler = "Plain words about nothing much fill this opening line here. "
    passage = "frobnicator resets the quantum widget"
    guide = filler + passage + " after a cold start."
    # Each half of the passage has a short rival; long unrelated pages set the average length.
    pages = {f"long{i}.md": " ".join(f"lorem{i}{j} ipsum" for j in range(40)) for i in range(3)}
    corpus = _write(tmp_path / "docs", {
        "guide.md": guide, "a.md": "The frobnicator resets.", "b.md": "The quantum widget.",
        "e.md": "after a cold start it idles", **pages,
    })  # fmt: skip
    gold = _gold(tmp_path, [
        {"id": "q1", "question": "frobnicator resets quantum widget",
         "relevant": [{"doc": "guide.md", "quote": passage}]},
        {"id": "q2", "question": "plain words opening line", "relevant": ["guide.md"]},
    ])  # fmt: skip
    chunker = ChunkerConfig(kind="fixed", size=80, overlap=0)
    run = run_job(EvalJob(str(gold), "bm25", str(corpus), chunker=chunker, k=1), store=store).run
    explanation = explain_run(store, run.id, ExplainOptions(depth=2, dense=False))
    assert [m.item_id for m in explanation.misses] == ["q1"]
    assert _kinds(explanation, "q1") == ["chunking"]
    evidence = explanation.misses[0].causes[0].evidence
    start = guide.find(passage)
    assert evidence["reason"] == "cut" and evidence["passage"] == [start, start + len(passage)]
    assert evidence["boundaries"] and all(
        start < b < start + len(passage) for b in evidence["boundaries"]
    )
    assert evidence["rank"] == 1 and evidence["rechunk"]["kind"] == "markdown"


def test_gold_may_be_wrong_suggests_the_edit(store: Store) -> None:
    """Issue 28: a top-k chunk that is not gold but holds the expected answer: *the gold
    set may be wrong*, with the gold edit pre-filled for the dashboard's form."""
    texts = {"faq.md": "You can get your money back within 30 days.", "other.md": "Hello."}
    gold = ragmeter.GoldSet.from_records([
        {"id": "q1", "question": "refund window?", "relevant": ["policy.md"],
         "answer_contains": ["30 days"]},
        {"id": "q2", "question": "policy?", "relevant": ["policy.md"]},
    ])  # fmt: skip
    search = _by_doc({"refund window?": ["other.md", "faq.md"], "policy?": ["policy.md"]}, texts)
    run = ragmeter.evaluate(gold, search, k=2, store=store).run
    explanation = explain_run(store, run.id, ExplainOptions(retriever=search, depth=5, dense=False))
    assert _kinds(explanation, "q1") == ["gold_may_be_wrong"]
    cause = explanation.misses[0].causes[0]
    assert cause.suggestion == {"run": str(run.id), "item_id": "q1", "action": "relevant",
                                "doc": "faq.md", "chunk": "faq.md", "grade": 1,
                                "quote": "30 days"}  # fmt: skip
    assert cause.evidence["rank"] == 2


def test_not_in_index_when_the_gold_document_is_not_in_the_corpus(
    tmp_path: Path, store: Store
) -> None:
    """Issue 28: a gold document missing from the corpus: *not in the index*, naming it."""
    corpus = _write(tmp_path / "docs", {"here.md": "Install with pip.", "x.md": "Unrelated."})
    gold = _gold(tmp_path, [
        {"id": "q1", "question": "how to uninstall", "relevant": ["gone.md"]},
        {"id": "q2", "question": "install with pip", "relevant": ["here.md"]},
    ])  # fmt: skip
    run = run_job(EvalJob(str(gold), "bm25", str(corpus), k=1), store=store).run
    explanation = explain_run(store, run.id, ExplainOptions(depth=5, dense=False))
    assert _kinds(explanation, "q1") == ["not_in_index"]
    evidence = explanation.misses[0].causes[0].evidence
    assert evidence["docs"] == ["gone.md"] and evidence["reason"] == "absent from the corpus"


def test_unexplained_when_no_probe_finds_evidence(store: Store) -> None:
    """Issue 28: nothing shows a cause: the miss says *unexplained*, not a guess."""
    gold = ragmeter.GoldSet.from_records([
        {"id": "q1", "question": "a?", "relevant": ["d1"]},
        {"id": "q2", "question": "b?", "relevant": ["d1"]},
    ])  # fmt: skip
    search = _by_doc({"a?": ["d2", "d1"], "b?": ["d2", "d3"]})
    run = ragmeter.evaluate(gold, search, k=1, store=store).run
    explanation = explain_run(
        store, run.id, ExplainOptions(retriever=search, depth=1 + 1, dense=False)
    )
    assert _kinds(explanation, "q2") == ["unexplained"]
    assert explanation.of("q2").why() == "unexplained"  # type: ignore[union-attr]
    assert _kinds(explanation, "q1") == ["ranked_too_low"]


def test_explanation_is_stored_with_the_run_and_replaced(store: Store) -> None:
    """Issue 28: explain stores its result; `show` reads it back; a second explain replaces it."""
    gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "a?", "relevant": ["d2"]}])
    search = _by_doc({"a?": ["d1", "d2"]})
    run = ragmeter.evaluate(gold, search, k=1, store=store).run
    first = explain_run(store, run.id, ExplainOptions(retriever=search, depth=5, dense=False))
    again = stored_explanation(store, run.id)
    assert again is not None and again.to_dict() == first.to_dict()
    second = explain_run(store, run.id, ExplainOptions(retriever=search, depth=2, dense=False))
    assert stored_explanation(store, run.id).depth == second.depth == 2  # type: ignore[union-attr]


def test_depth_must_exceed_k(store: Store) -> None:
    """Issue 28: asking again no deeper than the run's k proves nothing: a clear error."""
    gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "a?", "relevant": ["d2"]}])
    run = ragmeter.evaluate(gold, _by_doc({}), k=5, store=store).run
    with pytest.raises(ragmeter.ConfigError, match="--depth 5 must be above the run's k"):
        explain_run(store, run.id, ExplainOptions(retriever=_by_doc({}), depth=5))


def test_not_in_index_when_your_retriever_never_returns_the_document(store: Store) -> None:
    """Issue 28: for a retriever whose index ragmeter cannot see, a gold document that no
    ranking of the run and no deeper list ever held: *not in the index*, never returned."""
    gold = ragmeter.GoldSet.from_records([
        {"id": "q1", "question": "a?", "relevant": ["d9"]},
        {"id": "q2", "question": "b?", "relevant": ["d1"]},
    ])  # fmt: skip
    search = _by_doc({"a?": ["d1", "d2", "d3"], "b?": ["d1"]})
    run = ragmeter.evaluate(gold, search, k=1, store=store).run
    explanation = explain_run(
        store, run.id, ExplainOptions(retriever=search, depth=10, dense=False)
    )
    assert _kinds(explanation, "q1") == ["not_in_index"]
    evidence = explanation.misses[0].causes[0].evidence
    assert evidence == {"docs": ["d9"], "reason": "never returned", "depth": 10, "questions": 2}


def test_a_module_function_run_is_rebuilt_and_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: Store
) -> None:
    """Issue 28: a run of `module:function` is rebuilt from its stored spec and asked again
    deeper, as `eval` asked it; the gold document at rank 7 is *ranked too low*, rank 7."""
    (tmp_path / "explain_search.py").write_text(
        "def search(question, k):\n"
        "    return [{'id': f'd{i}', 'doc': f'd{i}'} for i in range(1, 11)][:k]\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    gold = _gold(tmp_path, [{"id": "q1", "question": "where?", "relevant": ["d7"]}])
    run = run_job(EvalJob(str(gold), "explain_search:search", k=5), store=store).run
    explanation = explain_run(store, run.id, ExplainOptions(depth=10, dense=False))
    assert _kinds(explanation, "q1") == ["ranked_too_low"]
    assert explanation.misses[0].causes[0].evidence["rank"] == 7
    assert "--corpus" in explanation.skipped["bm25"]


def test_a_run_file_gives_the_depth_it_holds(tmp_path: Path, store: Store) -> None:
    """Issue 28: a `run:` file cannot be asked deeper than it is: explain reads what it
    holds, finds the gold document at rank 4 > k, and says the file's depth."""
    run_file = tmp_path / "bm25.trec"
    run_file.write_text(
        "".join(f"q1 Q0 d{i} {i} {10 - i} x\n" for i in range(1, 5)), encoding="utf-8"
    )
    gold = _gold(tmp_path, [{"id": "q1", "question": "where?", "relevant": ["d4"]}])
    run = run_job(EvalJob(str(gold), f"run:{run_file}", k=2), store=store).run
    explanation = explain_run(store, run.id, ExplainOptions(depth=50, dense=False))
    assert _kinds(explanation, "q1") == ["ranked_too_low"]
    assert explanation.misses[0].causes[0].evidence["rank"] == 4
    assert "the run file holds 4 hits for this question" in explanation.misses[0].notes
    assert any("rankings are fixed" in note for note in explanation.notes)


def test_a_run_without_misses_explains_nothing(store: Store) -> None:
    """Issue 28: nothing missed: no cause, no knob, and nothing asked again."""
    asked: list[str] = []

    def search(question: str, k: int) -> list[dict[str, Any]]:
        asked.append(question)
        return [{"id": "d1", "doc": "d1"}]

    gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "a?", "relevant": ["d1"]}])
    run = ragmeter.evaluate(gold, search, k=1, store=store).run
    asked.clear()
    explanation = explain_run(store, run.id, ExplainOptions(retriever=search, depth=5, dense=False))
    assert (explanation.misses, explanation.knobs, asked) == ([], [], [])
    assert (explanation.n_evaluated, explanation.n_hits) == (1, 1)


def test_the_explain_modules_examples_hold() -> None:
    """Issue 28: the docstring examples of the explain modules run as written."""
    import doctest

    from ragmeter.evaluation.explain import ceiling, context, model, probes

    for module in (model, ceiling, context, probes):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__


def test_keywords_still_work_with_a_deprecation_warning() -> None:
    """Issue 25: `explain_run` takes one `ExplainOptions`; the old keywords give the same
    explanation, with a warning naming the replacement and the version it goes in."""
    docs = [f"d{i}" for i in range(1, 11)]
    gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "where?", "relevant": ["d8"]}])
    search = _by_doc({"where?": docs})
    store = Store.memory()
    run = ragmeter.evaluate(gold, search, k=5, store=store).run
    wanted = explain_run(store, run.id, ExplainOptions(retriever=search, depth=20, dense=False))
    with pytest.warns(DeprecationWarning, match=r"ExplainOptions\(\.\.\.\)\) instead"):
        old = explain_run(store, run.id, retriever=search, depth=20, dense=False)
    assert [m.to_dict() for m in old.misses] == [m.to_dict() for m in wanted.misses]
    assert old.misses[0].causes[0].evidence["rank"] == 8
