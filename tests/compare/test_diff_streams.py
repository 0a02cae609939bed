"""Issue 29.1: ``diff`` reads each metric as two columns and decodes no ranking it does not
print; its numbers are the per-question procedure's (``compare_runs`` over the stored dicts).

Decoded rankings are counted through ``_codec.RANKING_OBSERVERS``, the store's hook.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import _decoded
from ragmeter.cli import main
from ragmeter.compare.comparison import compare_runs
from ragmeter.compare.diff import diff_runs
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

decoded = _decoded.decoded

N = 2_000
DOCS = 100


def _gold() -> GoldSet:
    return GoldSet.from_records(
        [
            {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"d{i % DOCS}"}],
             "tags": [f"t{i % 5}"]}
            for i in range(N)
        ],
        name="big",
    )  # fmt: skip


def _search(shift: int) -> Any:
    """The relevant document at rank ``(i + shift) % 13 + 1`` (ranks 11-13 miss at k=10)."""

    def search(question: str, k: int) -> list[dict[str, Any]]:
        i = int(question.split()[1])
        rank = (i + shift) % 13 + 1
        docs = [f"x{j}" for j in range(13)]
        docs[rank - 1] = f"d{i % DOCS}"
        return [{"doc": d, "score": 1.0 / (j + 1)} for j, d in enumerate(docs[:k])]

    return search


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("diff") / "runs.db"
    with Store.open(path) as store:
        for name, shift in (("a", 0), ("b", 1)):
            evaluate(_gold(), _search(shift), store=store, name=name, commit="", k=10)
    return path


def test_diff_decodes_no_ranking(db: Path, decoded: list[str]) -> None:
    with Store.open(db, read_only=True) as store:
        diff = diff_runs(store, "a", "b")
    assert decoded == []
    # Independent reference: A finds rank i % 13 + 1, B rank (i + 1) % 13 + 1.
    # The top 10 come back, so ranks 11-13 are "nothing relevant" (None).
    missed = {f"q{i}" for i in range(N) if i % 13 == 9}  # rank 10 -> 11
    found = {f"q{i}" for i in range(N) if i % 13 == 12}  # rank 13 -> 1
    assert {f.id for f in diff.newly_missed} == missed
    assert {f.id for f in diff.newly_found} == found
    assert {(f.rank_a, f.rank_b) for f in diff.newly_missed} == {(10, None)}
    assert {(f.rank_a, f.rank_b, f.error_b) for f in diff.newly_found} == {(None, 1, None)}
    assert diff.flip_metric == "hit@10" and diff.n == N

    output = CliRunner().invoke(main, ["diff", "a", "b", "--store", f"sqlite:///{db}"])
    assert output.exit_code == 0, output.output
    assert decoded == []


def test_diff_is_the_per_question_procedure(db: Path) -> None:
    """Columns read one metric at a time give what the dicts of every value gave."""
    with Store.open(db, read_only=True) as store:
        diff = diff_runs(store, "a", "b")
        gold = GoldSet.from_records(store.load_gold_records(diff.b.gold_hash))
        reference = compare_runs(
            store.question_metrics(diff.a.id),
            store.question_metrics(diff.b.id),
            tags={item.id: list(item.tags) for item in gold},
            metrics=[m.metric for m in diff.metrics],
            labels=diff.comparison.labels,
        )
    assert diff.comparison == reference
    assert len(diff.tags) == 5 * len(diff.metrics)


def test_an_undefined_value_is_named(db: Path, tmp_path: Path) -> None:
    """An undefined value (NaN) leaves the fast path and is reported by the per-question rule."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    with Store.open(copy) as store:
        run = store.get_run("b")
        values = store.question_metrics(run.id)
        values["mrr"]["q7"] = math.nan
        store.set_metrics(run.id, run.metrics, values)
    with Store.open(copy, read_only=True) as store:
        from ragmeter.errors import InputError

        with pytest.raises(InputError, match='item q7: metric "mrr" is nan'):
            diff_runs(store, "a", "b", metrics=["mrr"])


def test_the_columns_on_sqlite_and_postgresql(store_url: str, decoded: list[str]) -> None:
    """The store reads one metric as sorted ids and values on both databases (PostgreSQL's
    collation is not the code point order ``sorted()`` uses: the store sorts again)."""
    gold = GoldSet.from_records(
        [{"id": i, "question": f"question {n}", "relevant": [{"doc": f"d{n % DOCS}"}]}
         for n, i in enumerate(["b", "B", "a", "_x", "é", "Z9", "z10"] * 1)]
    )  # fmt: skip
    with Store.open(store_url) as store:
        for name, shift in (("a", 0), ("b", 1)):
            evaluate(gold, _search(shift), store=store, name=name, commit="", k=10)
        ids, values = store.metric_column(store.get_run("a").id, "mrr")
        assert ids == sorted(item.id for item in gold) and len(values) == len(ids)
        assert "mrr" in store.question_metric_names(store.get_run("a").id)
        assert not store.has_answers(store.get_run("a").id)
        decoded.clear()
        diff = diff_runs(store, "a", "b")
        reference = compare_runs(
            store.question_metrics(diff.a.id),
            store.question_metrics(diff.b.id),
            tags={},
            metrics=[m.metric for m in diff.metrics],
            labels=diff.comparison.labels,
        )
    assert diff.comparison == reference and decoded == []
