"""Issue 29.1: ``show`` decodes only the rankings it prints.

A brief view (``read_run(..., rankings="shown")``, what ``show`` reads) must say exactly
what the full view says in its summary, while decoding the rankings of the misses only;
decoded rankings are counted through ``_codec.RANKING_OBSERVERS``, the store's hook.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import _decoded
import ragmeter
from ragmeter.cli import main
from ragmeter.errors import EvaluationError, RagmeterError
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.evaluation.report import build_report
from ragmeter.gold.goldset import GoldSet
from ragmeter.judging.judge_runs import judge_run_faithfulness
from ragmeter.store import Store

decoded, built = _decoded.decoded, _decoded.built

N = 5_000
DOCS = 200


def _gold(n: int) -> GoldSet:
    return GoldSet.from_records(
        [
            {
                "id": f"q{i}",
                "question": f"question {i}",
                "relevant": [{"doc": f"d{i % DOCS}"}],
                "answer_contains": [f"fact {i}"],
                "tags": [f"t{i % 7}"],
            }
            for i in range(n)
        ],
        name="big",
    )


def _search(question: str, k: int) -> list[dict[str, Any]]:
    """Two chunks per document; the relevant one at rank 1 to 13 (11 to 13 miss at k=10),
    and every 97th question has nothing relevant at all."""
    i = int(question.split()[1])
    shift = i % 13
    docs = [f"d{(i + j + DOCS - shift) % DOCS}" for j in range(k)]
    if i % 97 == 0:
        docs = [f"x{j}" for j in range(k)]
    return [{"id": f"{d}#{j % 2}", "doc": d, "score": 1.0 / (j + 1)} for j, d in enumerate(docs)]


def _failing_search(question: str, k: int) -> list[dict[str, Any]]:
    """:func:`_search`, failing on every 50th question (a run with failed questions)."""
    if int(question.split()[1]) % 50 == 1:
        raise RuntimeError("index offline")
    return _search(question, k)


def _generate(question: str, chunks: list[Any]) -> str:
    i = int(question.split()[1])
    return f"fact {i}" if i % 3 else "no idea"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("brief") / "runs.db"
    with Store.open(path) as store:
        evaluate(_gold(N), _search, store=store, name="big", commit="", k=10)
        for level in ("doc", "passage"):
            evaluate(_gold(300), _failing_search, store=store, name=f"gen-{level}", commit="",
                     k=10, level=level, generator=_generate)  # fmt: skip
        judge_run_faithfulness(store, "gen-doc", client=None)
        run = store.get_run("gen-doc")  # a stored warning, as `show` prints it
        store.update_run(run.id, config={**run.config, "warnings": ["ids looked odd"]})
    return path


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store.open(db, read_only=True) as opened:
        yield opened


@pytest.mark.parametrize("name", ["big", "gen-doc", "gen-passage"])
def test_the_brief_summary_is_the_full_one(store: Store, name: str) -> None:
    full = ragmeter.read_run(store, name).summary()
    brief = ragmeter.read_run(store, name, rankings="shown").summary()
    assert brief == full
    assert full["misses"] and full["coverage"]["gold"] > 0
    if name != "big":
        assert full["failed_answers"] and full["blame"]


@pytest.mark.parametrize("name", ["big", "gen-doc", "gen-passage"])
def test_show_prints_what_the_full_report_prints(
    store: Store, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show``'s text from the brief view is byte for byte the text of the full view
    (:func:`~ragmeter.evaluation.report.build_report`: every ranking decoded)."""
    from ragmeter.cli import _render

    printed = []
    for rankings in ("all", "shown"):
        view = ragmeter.read_run(store, name, rankings=rankings)  # type: ignore[arg-type]
        _render.print_view(view, show_all=False)
        printed.append(capsys.readouterr())
    full, brief = printed
    assert brief.out == full.out and brief.err == full.err
    assert "missed questions" in full.out
    if name != "big":
        assert "questions failed" in full.out and "index offline" in full.out
        assert "answer" in full.out
    if name == "gen-doc":
        assert "ids looked odd" in full.err


def test_show_decodes_the_misses_only(db: Path, store: Store, decoded: list[str]) -> None:
    view = ragmeter.read_run(store, "big", rankings="shown")
    summary = view.summary()
    # Independent reference: the questions _search puts out of the top 10, in gold order.
    missed = [f"q{i}" for i in range(N) if i % 13 >= 10 or i % 97 == 0]
    assert [m["id"] for m in summary["misses"]] == missed
    assert len(decoded) == len(missed) and set(decoded) == set(missed)
    assert len(missed) < N / 4


def test_show_decodes_the_misses_it_prints(db: Path, decoded: list[str]) -> None:
    """``show`` of a run with 1,192 misses prints 25 of them and decodes their rankings
    only, once each (issue 29.1)."""
    from ragmeter.cli._render import SHOW_MISSES
    from ragmeter.evaluation.brief import PREFETCH_MISSES

    assert PREFETCH_MISSES == SHOW_MISSES  # what show prints is read while the store is open
    missed = [f"q{i}" for i in range(N) if i % 13 >= 10 or i % 97 == 0]
    output = CliRunner().invoke(main, ["show", "big", "--store", f"sqlite:///{db}"])
    assert output.exit_code == 0, output.output
    printed = missed[:SHOW_MISSES]
    assert sorted(decoded) == sorted(printed)
    assert all(f"✗ {item_id} " in output.output for item_id in printed)
    assert f"✗ {missed[SHOW_MISSES]} " not in output.output
    assert f"… and {len(missed) - SHOW_MISSES} more" in output.output


@pytest.mark.parametrize("name", ["big", "gen-doc", "gen-passage"])
def test_show_builds_the_rows_it_prints(
    db: Path, store: Store, name: str, built: list[Any]
) -> None:
    """``show`` builds a ``QuestionRow`` for the questions it prints (misses, failed
    questions, failed answers) and a ``Miss`` for the misses it prints, no other (29.1)."""
    from ragmeter.cli._render import SHOW_MISSES
    from ragmeter.evaluation.report import Miss, QuestionRow

    full = ragmeter.read_run(store, name)  # the reference: every row built
    misses = [m.id for m in full.report.misses[:SHOW_MISSES]]
    errors = [r.id for r in full.report.errors[:5]]
    failed = [r.id for r in full.failed_answers[:SHOW_MISSES]]
    assert misses and (name == "big" or (errors and failed))
    built.clear()
    output = CliRunner().invoke(main, ["show", name, "--store", f"sqlite:///{db}"])
    assert output.exit_code == 0, output.output
    rows = {row.id for row in built if isinstance(row, QuestionRow)}
    assert rows == {*misses, *errors, *failed}
    assert sorted(m.id for m in built if isinstance(m, Miss)) == sorted(misses)
    assert len(full.rows) > 4 * len(rows)


@pytest.mark.parametrize("name", ["big", "gen-doc", "gen-passage"])
def test_lazy_rows_are_the_full_rows(store: Store, name: str) -> None:
    """Every row of a brief report, built when read, says what the full report's row says;
    it lists the top 3 hits of a question without a hit and none otherwise."""
    full = ragmeter.read_run(store, name).report
    brief = ragmeter.read_run(store, name, rankings="shown").report
    assert len(brief.rows) == len(full.rows)
    for lazy, whole in zip(brief.rows, full.rows, strict=True):
        shown = whole.retrieved[:3] if whole.error is None and not whole.hit else []
        assert lazy == replace(whole, retrieved=shown)
    assert brief.misses == full.misses and brief.errors == full.errors
    assert list(brief.misses[-3:]) == list(full.misses[-3:])


def test_the_json_still_has_every_ranking(store: Store, decoded: list[str]) -> None:
    view = ragmeter.read_run(store, "gen-passage")
    assert len(decoded) == 300
    assert all(q["retrieved"] for q in view.to_dict()["questions"] if q["error"] is None)
    brief = ragmeter.read_run(store, "gen-passage", rankings="shown")
    with pytest.raises(RagmeterError, match="rankings='shown'"):
        brief.questions()
    with pytest.raises(RagmeterError, match="rankings='shown'"):
        brief.export("csv")


def test_rows_stored_without_a_summary_are_decoded(decoded: list[str]) -> None:
    """Stores written before the summary column: every ranking is decoded, same summary."""
    with Store.memory() as store:
        run = evaluate(_gold(200), _search, store=store, name="new", commit="", k=10).run
        old = store.create_run(name="old", gold_hash=run.gold_hash, retriever="x",
                               config=store.get_run(run.id).config, k=10, level=run.level,
                               commit="")  # fmt: skip
        store.add_results(old.id, store.results(run.id))  # no summarize: as before
        store.set_metrics(old.id, run.metrics, store.question_metrics(run.id))
        decoded.clear()
        brief = ragmeter.read_run(store, "old", rankings="shown").summary()
        assert len(decoded) == 200
        full = ragmeter.read_run(store, "new").summary()
        assert brief["misses"] == full["misses"] and brief["coverage"] == full["coverage"]


def test_rows_stored_out_of_the_gold_order_are_matched_by_id() -> None:
    """Results stored in another order than the gold set's (a resumed run, workers finishing
    out of order), some missing: the brief view matches the columns by item id and says
    what the full view says (29.1)."""
    from ragmeter.evaluation.summary import row_summary

    with Store.memory() as store:
        run = evaluate(_gold(200), _search, store=store, name="new", commit="", k=10).run
        moved = store.create_run(name="moved", gold_hash=run.gold_hash, retriever="x",
                                 config=store.get_run(run.id).config, k=10, level=run.level,
                                 commit="")  # fmt: skip
        kept = [r for r in store.results(run.id) if r.item_id not in ("q3", "q11", "q199")]
        store.add_results(moved.id, kept[::-1], lambda r: row_summary(r, 10, run.level))
        store.set_metrics(moved.id, run.metrics, store.question_metrics(run.id))
        brief = ragmeter.read_run(store, "moved", rankings="shown")
        assert brief.summary() == ragmeter.read_run(store, "moved").summary()
        not_evaluated = [row.id for row in brief.report.errors]
        assert not_evaluated == ["q3", "q11", "q199"]  # in the gold set's order


def test_the_store_reads_summaries_and_some_rankings(store_url: str, decoded: list[str]) -> None:
    """SQLite and PostgreSQL: summaries without rankings, then only the rankings asked for;
    the same summary as the full view (its metric values read through the driver)."""
    with Store.open(store_url) as store:
        run = evaluate(_gold(300), _search, store=store, name="r", commit="", k=10).run
        decoded.clear()
        by_id = {r.item_id: s for r, s in store.result_summaries(run.id)}
        assert len(by_id) == 300 and not decoded
        rows = list(store.summary_rows(run.id))  # the same, as plain tuples
        assert [(i, s) for i, _, _, _, s in rows] == list(by_id.items())
        assert store.verdict_judges(run.id) == set()
        assert by_id["q0"] == {"first": None, "top": 10, "gold": 0}  # 0 % 97 == 0
        assert by_id["q12"]["first"] is None and by_id["q5"]["first"] == 6  # rank 13 of 10
        some = store.results_for(run.id, ["q1", "q12", "nope"])
        assert sorted(some) == ["q1", "q12"] and sorted(decoded) == ["q1", "q12"]
        assert len(some["q12"].hits) == 10
        values = store.question_metrics(run.id, ["mrr"])
        assert values["mrr"]["q1"] == 0.5 and list(values) == ["mrr"]
        assert ragmeter.read_run(store, "r", rankings="shown").summary() == (
            ragmeter.read_run(store, "r").summary()
        )


@pytest.mark.parametrize("name", ["big", "gen-doc"])
def test_the_judge_fields_are_the_judging_packages(store: Store, name: str) -> None:
    """A run no judge rated skips the judge fields without importing the judging package
    (29.1); they must be what that package computes, for a judged run and for one that is
    not (``big``: no judge; ``gen-doc``: a faithfulness judge)."""
    from ragmeter.judging.judge_sides import judge_sides, unstable_verdicts
    from ragmeter.read.view import judged_fields

    view = ragmeter.read_run(store, name, rankings="shown")
    run = store.get_run(name)
    judged, failure = judged_fields(store, run.id)
    assert (dict(view.judged), view.judged_failure) == (judged, failure)
    assert dict(view.judge_trust) == judge_sides(store, run, list(view.report.metrics))
    assert {judge: list(ids) for judge, ids in view.unstable.items()} == {
        judge: unstable_verdicts(store, run.id, judge) for judge in ("faithfulness", "relevance")
    }
    assert bool(judged) == (name == "gen-doc") == bool(view.judge_trust)


def test_show_imports_no_numpy_pydantic_or_judge(db: Path) -> None:
    """``show`` of a run no judge rated prints without importing numpy, pydantic, the
    judge or the judging package (issue 29.1: imports were a quarter of ``show``)."""
    code = (
        "import sys\n"
        "from ragmeter.cli import run\n"
        f"sys.argv = ['ragmeter', 'show', 'big', '--store', 'sqlite:///{db}']\n"
        "try:\n"
        "    run()\n"
        "except SystemExit as stop:\n"
        "    assert not stop.code, stop.code\n"
        "heavy = [m for m in ('numpy', 'pydantic', 'ragmeter.judge', 'ragmeter.judging',\n"
        "                     'ragmeter.compare.diff', 'ragmeter.gold.goldset') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "missed questions" in done.stdout
    assert "HEAVY []" in done.stdout


def test_a_closed_store_is_said_not_shown_as_nothing_retrieved() -> None:
    """``evaluate()``'s report reads a miss's hits when it is read (29.1): the 25 that
    ``eval`` prints were read already; a later one from a closed memory store is an error,
    never a miss listed with no hits."""
    store = Store.memory()
    report = evaluate(_gold(200), _search, store=store, name="m", commit="", k=10)
    full = build_report(store, report.run.id)
    assert len(report.misses) == len(full.misses) > 30
    store.close()
    assert report.misses[:25] == full.misses[:25]
    assert all(miss.retrieved for miss in report.misses[:25])
    with pytest.raises(EvaluationError, match="while its store is open"):
        report.misses[30]
