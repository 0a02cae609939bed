"""Issue 17.2: people's relevance grades for judge-graded chunks, and the corrected estimates
of judge-filled ranking metrics (export, import, ``corrected_relevance``, the simulation)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import ragmeter
from _openai_server import serve_chat
from ragmeter.cli import main
from ragmeter.errors import EvaluationError, RelevanceLabelError
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge import JudgeClient
from ragmeter.judging.corrected import corrected_metrics
from ragmeter.judging.corrected_relevance import corrected_relevance, stratified_ppi
from ragmeter.judging.filling import ranking_metrics
from ragmeter.judging.judge_runs import judge_run_relevance
from ragmeter.judging.relevance_labels import (
    export_relevance_labels,
    judge_grades,
    label_item_id,
    parse_label_item_id,
    relevance_label_set,
)
from ragmeter.judging.relevance_labels_import import import_relevance_labels
from ragmeter.metrics import compute_metrics
from ragmeter.metrics.uncertainty import UNIT_RANGE, ppi_mean
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.store import Store

# -- storage -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "chunk"),
    [
        ("q", "c"),
        ('q", "x', "c"),
        ("a,b", "c]d"),
        ("tab\tnew\nline", "nul\x00\u202e"),
        ("", "é ☃"),
    ],
    ids=["plain", "quote-comma", "brackets", "controls", "empty-unicode"],
)
def test_label_item_ids_round_trip_any_characters(question: str, chunk: str) -> None:
    """Issue 17.2: a (question, chunk) pair's item id decodes to the same pair whatever the
    ids hold, and is ASCII (no NUL reaches the store)."""
    item = label_item_id(question, chunk)
    assert parse_label_item_id(item) == (question, chunk)
    assert item.isascii() and "\x00" not in item
    assert relevance_label_set(12) == "run-12-relevance"


# -- a demo-like run, judged for relevance over loopback, filled --------------------------


def _answer(question: str, chunks: list[Any]) -> str:
    # Any answer: what matters is that the run keeps every retrieved chunk's text as context.
    return "see the docs"


def _demo_run(store: Store, folder: Path) -> int:
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.jobs import run_job

    # The bundled gold set's first 24 questions: enough to sample from, quick to judge.
    records = yaml.safe_load(example_gold_path().read_text(encoding="utf-8"))[:24]
    # Words no document has: nothing retrieved, so no chunk for the judge (S < N).
    unanswerable = {"id": "nothing", "question": "qqqzzx wwwxxy", "relevant": [{"doc": "index.md"}]}
    records.append(unanswerable)
    gold_path = folder / "gold.yaml"
    gold_path.write_text(yaml.safe_dump(records), encoding="utf-8")
    job = EvalJob(
        gold=str(gold_path),
        corpus=str(example_corpus_dir()),
        chunker=ChunkerConfig(kind="markdown", size=800, overlap=100),
        k=5,
        name="demo-like",
        metrics=("hit@5", "precision@5", "mrr", "ndcg@5", "recall@5", "num_rel_ret@5"),
    )
    report = run_job(job, store=store, generator=_answer)
    return report.run.id


def _people(question: str, chunk: str) -> int:
    """People's grade in these tests: stricter than the word-overlap judge."""
    return 2 if len(chunk) % 3 == 0 else 0


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A demo-like run, judged for relevance by a loopback server and rescored with it."""
    folder = tmp_path_factory.mktemp("rel")
    db = folder / "runs.db"
    with Store.open(db) as store:
        run_id = _demo_run(store, folder)
    with serve_chat("judge") as server:
        out = CliRunner().invoke(
            main,
            ["judge", "relevance", str(run_id), "--fill-with-judge", "--model", "m"]
            + ["--base-url", server.base_url, "--store", str(db)],
        )
        requests = len(server.requests)
    assert out.exit_code == 0, out.output
    return {"db": db, "run": run_id, "requests": requests}


def _fill_in(path: Path, grade: Any = _people) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for question in data["questions"]:
        for chunk in question["chunks"]:
            chunk["grade"] = grade(question["id"], chunk["id"])
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return dict(data)


@pytest.mark.slow  # the shared fixture: a 24-question BM25 run judged over loopback (~9 s)
def test_export_is_blind_and_samples_among_judged_questions(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    """Issue 17.2: the export lists each sampled question's judge-graded chunks (id, doc,
    text) with grade null and never the judge's grade; --sample draws N of the questions
    with judge-graded chunks, the same N for the same seed; an existing file is kept unless
    --force."""
    assert filled["requests"] > 50  # a real judge pass happened
    runner = CliRunner()
    db, run = str(filled["db"]), str(filled["run"])
    first, again, other = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"
    for path, seed in ((first, "1"), (again, "1"), (other, "2")):
        out = runner.invoke(
            main,
            ["judge", "relevance-labels", "export", run, "--out", str(path)]
            + ["--sample", "8", "--seed", seed, "--store", db],
        )
        assert out.exit_code == 0, out.output
    assert "8 question(s)" in out.output
    text = first.read_text(encoding="utf-8")
    assert text == again.read_text(encoding="utf-8") != other.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    with Store.open(filled["db"]) as store:
        judged = judge_grades(store, filled["run"])
    assert len(judged) > 8
    assert data["run"] == filled["run"] and data["sample"]["drawn"] == 8
    assert data["sample"]["of"] == len(judged)
    assert len(data["questions"]) == 8
    for question in data["questions"]:
        chunks = {c["id"]: c for c in question["chunks"]}
        assert set(chunks) == set(judged[question["id"]])
        assert all(c["grade"] is None and c["text"] and c["doc"] for c in chunks.values())
        assert all(set(c) == {"id", "doc", "text", "grade"} for c in chunks.values())
    assert "grade: null" in text and not re.search(r"grade: [0-3]", text)  # no judge grade
    # An existing file is never overwritten (it may hold an afternoon of labels).
    out = runner.invoke(
        main, ["judge", "relevance-labels", "export", run, "--out", str(first), "--store", db]
    )
    assert out.exit_code == 2 and "already exists" in out.output
    assert first.read_text(encoding="utf-8") == text
    out = runner.invoke(
        main,
        ["judge", "relevance-labels", "export", run, "--out", str(first), "--force", "--store", db],
    )
    assert out.exit_code == 0 and len(yaml.safe_load(first.read_text())["questions"]) > 8


def _hand_values(
    store: Store, run_id: int, grades: dict[tuple[str, str], int]
) -> dict[str, dict[str, float]]:
    """hit@5 and precision@5 per question at passage level, recomputed by hand: a top-5 chunk
    is relevant when it covers a gold entry (stored ``covers``) or has a grade above 0."""
    out: dict[str, dict[str, float]] = {"hit@5": {}, "precision@5": {}}
    for result in store.results(run_id):
        top = result.hits[:5]
        covers = result.extra["covers"][:5]
        relevant = [
            bool(entries) or grades.get((result.item_id, hit.id), 0) > 0
            for hit, entries in zip(top, covers, strict=True)
        ]
        out["hit@5"][result.item_id] = float(any(relevant))
        out["precision@5"][result.item_id] = sum(relevant) / 5
    return out


@pytest.mark.slow
def test_import_then_corrected_relevance_is_the_hand_computation(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    """Issue 17.2: export --sample, fill grades, import; corrected_relevance of hit@5 and
    precision@5 is ppi_mean over the hand-recomputed values, its correction scaled by the
    share of questions the judge graded chunks for; a second import changes nothing."""
    runner = CliRunner()
    db, run_id = str(filled["db"]), filled["run"]
    path = tmp_path / "labels.yaml"
    out = runner.invoke(
        main,
        ["judge", "relevance-labels", "export", str(run_id), "--out", str(path)]
        + ["--sample", "12", "--seed", "3", "--store", db],
    )
    assert out.exit_code == 0, out.output
    data = _fill_in(path)
    labelled = [q["id"] for q in data["questions"]]
    out = runner.invoke(
        main, ["judge", "relevance-labels", "import", str(run_id), str(path)] + ["--store", db]
    )
    assert out.exit_code == 0, out.output
    assert "12 question(s) stored, 0 unchanged, 0 not fully labelled" in out.output
    with Store.open(filled["db"]) as store:
        before = store.labels(relevance_label_set(run_id))
        again = runner.invoke(
            main, ["judge", "relevance-labels", "import", str(run_id), str(path), "--store", db]
        )
        assert again.exit_code == 0 and "0 question(s) stored, 12 unchanged" in again.output
        assert store.labels(relevance_label_set(run_id)) == before
        judged = judge_grades(store, run_id)
        judge_pairs = {(q, c): g for q, cs in judged.items() for c, g in cs.items()}
        people_pairs = {(q, c): _people(q, c) for q in labelled for c in judged[q]}
        stored = store.question_metrics(run_id)
        judge_hand = _hand_values(store, run_id, judge_pairs)
        people_hand = _hand_values(store, run_id, {**judge_pairs, **people_pairs})
        corrected = corrected_relevance(store, run_id)
    assert {"hit@5", "precision@5", "mrr", "ndcg@5", "recall@5", "num_rel_ret@5"} <= set(corrected)
    assert set(corrected) == set(ranking_metrics(stored))
    n = len(stored["hit@5"])
    share = len(judged) / n
    assert 0 < share < 1  # some questions have no judge-graded chunk: the scaling matters
    for name in ("hit@5", "precision@5"):
        # The stored gold+judge values are the hand computation with the judge's grades.
        assert stored[name] == pytest.approx(judge_hand[name], abs=1e-12)
        j_all = list(stored[name].values())
        j = np.array([judge_hand[name][q] for q in labelled])
        h = np.array([people_hand[name][q] for q in labelled])
        estimate = np.mean(j_all) + share * np.mean(h - j)
        # The residual's variance, never below it with half a pseudo-label at each end of
        # the metric's range (+-1), weighted by sqrt(10 / labels) (issue 26.4).
        r = share * (h - j)
        c = 0.5 * min(1.0, np.sqrt(10 / r.size))
        w = r.size + 2 * c
        smoothed = max(np.var(r, ddof=1), (np.sum(r**2) + 2 * c - np.sum(r) ** 2 / w) / (w - 1))
        half = 1.959964 * np.sqrt(np.var(j_all, ddof=1) / n + smoothed / len(labelled))
        got = corrected[name]
        assert got.n_labels == 12 and got.n_total == n and got.status == "corrected"
        assert got.judge_mean == pytest.approx(np.mean(j_all))
        assert got.estimate == pytest.approx(min(max(estimate, 0.0), 1.0), abs=1e-9)
        low, high = max(estimate - half, 0.0), min(estimate + half, 1.0)
        assert got.interval == pytest.approx((low, high), abs=1e-6)
    # `show` lists them with the other judge metrics (judging.corrected._SOURCES).
    shown = runner.invoke(main, ["show", str(run_id), "--store", db])
    assert shown.exit_code == 0, shown.output
    assert f"hit@5 {corrected['hit@5'].describe()}" in shown.output
    assert "12 labels" in shown.output
    # The next batch comes from the questions not yet fully labelled.
    rest = tmp_path / "rest.yaml"
    out = runner.invoke(
        main,
        ["judge", "relevance-labels", "export", str(run_id), "--out", str(rest)]
        + ["--unlabelled-only", "--store", db],
    )
    assert out.exit_code == 0, out.output
    left = [q["id"] for q in yaml.safe_load(rest.read_text(encoding="utf-8"))["questions"]]
    assert sorted(left) == sorted(set(judged) - set(labelled))
    # A count is not a share: it is not cut to [0, 1].
    assert corrected["num_rel_ret@5"].judge_mean > 1.0 and not corrected["num_rel_ret@5"].clipped


def test_corrected_relevance_is_empty_unless_filled_and_uncalibrated_without_labels(
    store: Store,
    judge: JudgeClient,
) -> None:
    """Issue 17.2: a run not rescored with the judge has no judge-filled metric ({}); a filled
    run without people's grades reports each metric uncalibrated."""
    from tests.evaluation.test_generation import answer, search

    gold = GoldSet.from_records(
        [
            {
                "id": "refund",
                "question": "How long do refunds take?",
                "relevant": [{"doc": "refunds.md"}],
            },
            {
                "id": "ship",
                "question": "How fast do orders ship?",
                "relevant": [{"doc": "shipping.md"}],
            },
        ]
    )
    run = ragmeter.evaluate(gold, search, k=2, store=store, generator=answer).run
    judge_run_relevance(store, run.id, client=judge)
    assert corrected_relevance(store, run.id) == {}
    judge_run_relevance(store, run.id, client=judge, fill_with_judge=True)
    corrected = corrected_relevance(store, run.id)
    assert corrected and all(m.status == "uncalibrated" for m in corrected.values())
    assert corrected["mrr"].estimate is None


def test_a_run_without_a_generator_is_graded_from_the_text_it_kept(store: Store) -> None:
    """Issue 17.2: a retrieval-only run keeps each hit's text (issue 15.1), so its unlabelled
    chunks are graded from it. Previously only a generator's context was read and such a
    run sent nothing to the judge (every chunk was "skipped: no text")."""
    from tests.evaluation.test_generation import DOCS, search

    from ragmeter.judging.judge_runs import relevance_cases

    gold = GoldSet.from_records(
        [{"id": "refund", "question": "How long do refunds take?", "relevant": ["refunds.md"]}]
    )
    run = ragmeter.evaluate(gold, search, k=2, store=store).run
    cases, keys, no_text = relevance_cases(store, store.get_run(run.id))
    assert cases and no_text == 0
    for case in cases:
        _, chunk = keys[case.id]
        assert case.chunk == DOCS[chunk.split("#")[0]]


# -- validation ------------------------------------------------------------------------------


def _labels_file(tmp_path: Path, store: Store, run_id: int) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "in.yaml"
    export_relevance_labels(store, run_id, path)
    return path, yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["questions"][0].update(id="nope"),
            'question "nope" field id: not a question with judge-graded chunks in run',
        ),
        (
            lambda d: d["questions"][0]["chunks"][0].update(id="other.md#9"),
            'chunk "other.md#9" field id: not a chunk the judge graded for this question',
        ),
        (
            lambda d: d["questions"][0]["chunks"][0].update(grade=5),
            "field grade: 5 is not a grade 0-3 (or null)",
        ),
        (
            lambda d: d["questions"][0]["chunks"][0].update(grade="2"),
            'field grade: "2" is not a grade 0-3 (or null)',
        ),
        (
            lambda d: d["questions"][0]["chunks"][0].update(grade=True),
            "field grade: True is not a grade 0-3 (or null)",
        ),
        (
            lambda d: d["questions"][0]["chunks"][0].update(grdae=1),
            "field grdae: unknown field",
        ),
        (lambda d: d.update(run=999), "field run: the file is for run 999, not run"),
        (
            lambda d: d["questions"].append(copy.deepcopy(d["questions"][0])),
            "field id: repeats an earlier question",
        ),
    ],
    ids=[
        "unknown-question",
        "chunk-not-judged",
        "grade-5",
        "grade-string",
        "grade-bool",
        "unknown-field",
        "other-run",
        "repeated-question",
    ],
)
def test_import_names_file_question_chunk_and_field_and_stores_nothing(
    tmp_path: Path, edit: Any, message: str, judge: JudgeClient
) -> None:
    """Issue 17.2: a bad labels file is refused with the file, question, chunk and field,
    exit 2 and no traceback, and nothing of it is stored."""
    db = tmp_path / "r.db"
    with Store.open(db) as store:
        from tests.evaluation.test_generation import answer, search
        from tests.judging.test_judge_identity import _gold

        run = ragmeter.evaluate(_gold(), search, k=2, store=store, generator=answer).run
        judge_run_relevance(store, run.id, client=judge)
        path, data = _labels_file(tmp_path, store, run.id)
    for question in data["questions"]:
        for chunk in question["chunks"]:
            chunk["grade"] = 1
    edit(data)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = CliRunner().invoke(
        main, ["judge", "relevance-labels", "import", str(run.id), str(path), "--store", str(db)]
    )
    assert out.exit_code == 2, out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)
    assert f"relevance labels {path} " in out.output and message in out.output
    assert "nothing was stored" in out.output
    with Store.open(db) as store:
        assert store.labels(relevance_label_set(run.id)) == {}


def test_a_question_with_a_null_grade_is_not_stored(tmp_path: Path, judge: JudgeClient) -> None:
    """Issue 17.2: a question with any grade still null is not stored and is counted as not
    fully labelled; the fully labelled ones are stored."""
    from tests.evaluation.test_generation import answer, search
    from tests.judging.test_judge_identity import _gold

    with Store.memory() as store:
        run = ragmeter.evaluate(_gold(), search, k=2, store=store, generator=answer).run
        judge_run_relevance(store, run.id, client=judge)
        path, data = _labels_file(tmp_path, store, run.id)
        assert len(data["questions"]) >= 2
        for question in data["questions"]:
            for chunk in question["chunks"]:
                chunk["grade"] = 0
        data["questions"][0]["chunks"][-1]["grade"] = None
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        result = import_relevance_labels(store, run.id, path)
        stored = store.labels(relevance_label_set(run.id))
    first = data["questions"][0]["id"]
    assert result.not_fully_labelled == [first]
    assert len(result.stored) == len(data["questions"]) - 1
    assert all(parse_label_item_id(i)[0] != first for i in stored)  # type: ignore[index]
    with pytest.raises(RelevanceLabelError, match="expected a mapping"):
        (tmp_path / "bad.yaml").write_text("- 1\n", encoding="utf-8")
        with Store.memory() as other:
            run2 = ragmeter.evaluate(_gold(), search, k=2, store=other).run
            import_relevance_labels(other, run2.id, tmp_path / "bad.yaml")


# -- a doc-level run ---------------------------------------------------------------------------


def test_doc_level_run_maps_chunks_to_docs_max_grade_gold_wins(
    tmp_path: Path, store: Store, judge: JudgeClient
) -> None:
    """Issue 17.2: at doc level people's grades go to the chunk's document, the highest of its
    chunks, gold labels first; the corrected estimate is ppi_mean over the doc-level values
    recomputed by hand with compute_metrics."""
    docs = {
        "refunds.md": ["Refunds are accepted within 30 days.", "Refunds go to the card."],
        "legal.md": ["Refunds law applies to refunds.", "Refunds policy archive."],
        "faq.md": ["Contact support by email.", "Refunds take days to process."],
    }

    def search(question: str, k: int) -> list[dict[str, Any]]:
        order = ["legal.md#0", "legal.md#1", "refunds.md#0", "faq.md#1"]
        if "contact" in question:
            order = ["faq.md#0", "legal.md#0", "legal.md#1", "refunds.md#1"]
        return [
            {"id": c, "doc": c.split("#")[0], "text": docs[c.split("#")[0]][int(c[-1])]}
            for c in order[:k]
        ]

    gold = GoldSet.from_records(
        [
            {
                "id": "refund",
                "question": "How long do refunds take?",
                "relevant": [{"doc": "refunds.md"}],
            },
            {
                "id": "contact",
                "question": "How do I contact support?",
                "relevant": [{"doc": "faq.md"}],
            },
        ]
    )
    people = {"legal.md#0": 0, "legal.md#1": 1, "faq.md#1": 3, "refunds.md#1": 0}
    run = ragmeter.evaluate(
        gold,
        search,
        k=4,
        store=store,
        level="doc",
        generator=lambda q, c: "x",
        metrics=["ndcg@4", "mrr", "hit@1"],
    ).run
    judge_run_relevance(store, run.id, client=judge, fill_with_judge=True)
    path, data = _labels_file(tmp_path, store, run.id)
    _fill_in(path, lambda q, c: people[c])
    result = import_relevance_labels(store, run.id, path)
    judged = judge_grades(store, run.id)
    corrected = corrected_relevance(store, run.id)
    judged_metrics = corrected_metrics(store, run.id)
    stored = store.question_metrics(run.id)
    assert sorted(result.stored) == ["contact", "refund"]
    assert {m: judged_metrics[m] for m in corrected} == corrected  # registered in _SOURCES
    rankings = {
        "refund": ["legal.md", "refunds.md", "faq.md"],
        "contact": ["faq.md", "legal.md", "refunds.md"],
    }

    def qrels(grades: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        out = {q: dict(gold.qrels()[q]) for q in rankings}
        for q, chunks in grades.items():
            for chunk, grade in chunks.items():
                doc = chunk.split("#")[0]
                if doc not in gold.qrels()[q]:  # gold wins
                    out[q][doc] = max(out[q].get(doc, 0), grade)
        return out

    by_people = {q: {c: people[c] for c in chunks} for q, chunks in judged.items()}
    assert qrels(by_people)["refund"] == {"refunds.md": 1, "legal.md": 1, "faq.md": 3}
    names = ["ndcg@4", "mrr", "hit@1"]
    judge_values = compute_metrics(qrels(judged), rankings, names).per_query
    human_values = compute_metrics(qrels(by_people), rankings, names).per_query
    for name in names:
        assert stored[name] == pytest.approx(dict(judge_values[name]))
        order = list(rankings)
        expected = ppi_mean(
            [judge_values[name][q] for q in order],
            [judge_values[name][q] for q in order],
            [human_values[name][q] for q in order],
            bounds=UNIT_RANGE,
        )
        assert corrected[name].estimate == pytest.approx(expected.estimate)
        assert corrected[name].n_labels == 2


# -- the simulation ------------------------------------------------------------------------------


@pytest.mark.slow  # 2,000 sets of 1,500 questions: ~3 s each idle
@pytest.mark.parametrize("metric", ["precision@5", "hit@5"])
def test_simulation_lenient_judge_unbiased_and_covers(metric: str) -> None:
    """Issue 17.2: ranking-metric-shaped data: 5 retrieved chunks per question, a third
    relevant; gold labels half the relevant ones, a lenient judge grades the rest (it calls
    30% of irrelevant chunks relevant and finds 90% of relevant ones); a fifth of the
    questions are fully gold-labelled, so labels sample only the others (200 labelled of
    1,500 questions). Over 2,000 simulated sets the corrected estimate is unbiased within 0.01 and its 95% interval covers
    the truth 93-97% of the time; the judge alone is far off, and so is ``ppi_mean`` with
    the correction left unscaled by the judged share."""
    rng = np.random.default_rng(17)
    sets, n_questions, n_labels, k, p = 2_000, 1_500, 200, 5, 1 / 3
    truth = p if metric == "precision@5" else 1 - (1 - p) ** k
    relevant = rng.random((sets, n_questions, k)) < p
    gold_only = rng.random((sets, n_questions)) < 0.2  # every chunk labelled by gold
    in_gold = relevant & ((rng.random((sets, n_questions, k)) < 0.5) | gold_only[..., None])
    judged = ~in_gold & ~gold_only[..., None]
    says = np.where(relevant, rng.random(relevant.shape) < 0.9, rng.random(relevant.shape) < 0.3)
    filled = in_gold | (judged & says)

    def value(labels: np.ndarray) -> np.ndarray:
        return labels.mean(axis=-1) if metric == "precision@5" else labels.any(axis=-1) * 1.0

    judge, human = value(filled), value(relevant)
    estimates, naive, covered = [], [], 0
    for s in range(sets):
        eligible = np.flatnonzero(judged[s].any(axis=-1))
        sample = rng.choice(eligible, size=n_labels, replace=False)
        result = stratified_ppi(
            judge[s], eligible.size / n_questions, judge[s][sample], human[s][sample]
        )
        assert result.interval is not None and result.estimate is not None
        estimates.append(result.estimate)
        naive.append(ppi_mean(judge[s], judge[s][sample], human[s][sample]).estimate)
        covered += result.interval[0] <= truth <= result.interval[1]
    bias = float(np.mean(estimates)) - truth
    print(
        f"{metric}: bias {bias:+.4f}, coverage {covered / sets:.2%}, unscaled bias {float(np.mean(naive)) - truth:+.4f}"
    )
    assert abs(bias) < 0.01, bias
    assert 0.93 <= covered / sets <= 0.97, covered / sets
    assert float(judge.mean()) - truth > 0.05  # the judge alone is lenient
    # Unscaled, the correction measured on the judged questions is applied to all of them.
    assert float(np.mean(naive)) - truth < -0.01


def test_stale_judge_filled_metric_stops_with_an_error(
    tmp_path: Path, store: Store, judge: JudgeClient
) -> None:
    """Issue 17.2: when a run's stored judge-filled values no longer match its stored judge
    grades (re-judged after the fill), the correction stops with an error rather than
    subtracting the wrong numbers; an unknown run has nothing to correct."""
    from tests.evaluation.test_generation import answer, search
    from tests.judging.test_judge_identity import _gold

    run = ragmeter.evaluate(_gold(), search, k=2, store=store, generator=answer).run
    judge_run_relevance(store, run.id, client=judge, fill_with_judge=True)
    path, _ = _labels_file(tmp_path, store, run.id)
    _fill_in(path, lambda q, c: 0)
    import_relevance_labels(store, run.id, path)
    assert corrected_relevance(store, run.id)["mrr"].status == "corrected"
    per_query = store.question_metrics(run.id)
    per_query["mrr"] = {q: 0.25 for q in per_query["mrr"]}
    store.set_metrics(run.id, dict(store.get_run(run.id).metrics), per_query)
    with pytest.raises(EvaluationError, match="--fill-with-judge` again"):
        corrected_relevance(store, run.id)
    assert corrected_relevance(store, 999) == {}
