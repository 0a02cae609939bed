"""Store migrations: numbered, named, applied on open (issue 3, item 5; issue 9: PostgreSQL)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from _postgres import execute, table_names
from ragmeter.documents import Hit
from ragmeter.errors import StoreError
from ragmeter.run import QuestionResult
from ragmeter.store import Store
from ragmeter.store.migrations import MIGRATIONS, latest_version


def test_migrations_are_numbered_in_order() -> None:
    """Issue 3: an ordered list of (number, name, function), numbers 1, 2, 3, ..."""
    assert [m.number for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert len({m.name for m in MIGRATIONS}) == len(MIGRATIONS)
    assert all(m.apply.__doc__ for m in MIGRATIONS)


def test_old_store_is_migrated_on_open(store_url: str) -> None:
    """Issue 3, 9: a store at version 1 gets the later migrations on open, data kept."""
    path = store_url
    gold = SimpleNamespace(hash="g1", name="faq", to_records=lambda: [{"id": "q1"}])
    with Store.open(path, schema_version=1) as old:
        assert old.schema_version == 1
        old.save_gold(gold)
    # A run as version 1 stored it (today's create_run reads tables v1 lacks).
    execute(
        path,
        "INSERT INTO runs (id, name, note, created, gold_hash, retriever, config, k, level,"
        " status, n_questions, n_errors) VALUES (7, 'v1', '', '2025-01-01T00:00:00Z', 'g1',"
        " 'bm25', '{}', 5, 'doc', 'complete', 1, 0)",
    )
    with Store.open(path, schema_version=1) as old:
        old.add_results(7, [QuestionResult(item_id="q1", hits=(Hit(id="a#0", doc="a"),))])
    assert {"_migrations", "gold_sets", "runs", "results"} <= table_names(path)
    assert "question_metrics" not in table_names(path)

    with Store.open(path) as store:
        assert store.schema_version == latest_version()
        run = store.get_run("v1")
        assert (run.id, run.status, run.gold_hash) == (7, "complete", "g1")
        assert [r.hits for r in store.results(7)] == [(Hit(id="a#0", doc="a"),)]
        store.set_metrics(7, {"mrr": 0.5}, {"mrr": {"q1": 0.5}})
        assert store.question_metrics(7) == {"mrr": {"q1": 0.5}}
        assert store.get_run(7).metrics == {"mrr": 0.5}
    recorded = execute(path, "SELECT number, name FROM _migrations ORDER BY number")
    assert recorded == [(m.number, m.name) for m in MIGRATIONS]


def test_reopening_applies_nothing(store_url: str) -> None:
    """Issue 3, 9: opening an up-to-date store runs no DDL."""
    path = store_url
    Store.open(path).close()
    seen: list[str] = []
    with Store.open(path, tracer=lambda sql, params: seen.append(sql)):
        pass
    assert not [sql for sql in seen if sql.lstrip().upper().startswith("CREATE")]
    assert not [sql for sql in seen if "INSERT INTO _migrations" in sql]


def test_store_from_a_newer_ragmeter_is_refused(store_url: str) -> None:
    """Issue 3, 9: a schema this version does not know is an error, not silent damage."""
    path = store_url
    Store.open(path).close()
    execute(path, "INSERT INTO _migrations VALUES (99, 'future', '2099-01-01T00:00:00+00:00')")
    with pytest.raises(StoreError, match="schema version 99.*upgrade ragmeter"):
        Store.open(path)


def test_per_question_values_move_to_one_row_per_metric(store_url: str) -> None:
    """Issue 29.2: a store at version 8 (one ``question_metrics`` row per run, metric and
    question, NULL = undefined) reads back the same values after migration 9, on SQLite and
    PostgreSQL (whose collation does not order ids as ``sorted()`` does)."""
    path = store_url
    ids = ["b", "B", "a", "_x", "é", "Z9", "z10"]
    stored: dict[int, dict[str, dict[str, float | None]]] = {
        1: {
            "mrr": {i: n / 7 for n, i in enumerate(ids)},
            "ndcg@10": {i: 1 - n / 7 for n, i in enumerate(ids)},  # stored with mrr's ids
            "faithful": {"a": None, "b": 1.0},
        },
        2: {"mrr": {i: None if i == "B" else 0.25 for i in ids}},
    }
    with Store.open(path, schema_version=8) as old:
        gold = old.save_gold(SimpleNamespace(hash="g1", name="faq", to_records=lambda: []))
        for run_id in stored:
            run = old.create_run(
                name=f"r{run_id}", gold_hash=gold, retriever="bm25", config={}, k=5,
                level="doc", commit=None,
            )  # fmt: skip
            assert run.id == run_id
    for run_id, metrics in stored.items():
        for metric, values in metrics.items():
            for item_id, value in values.items():
                execute(
                    path,
                    "INSERT INTO question_metrics (run_id, metric, item_id, value) VALUES "
                    f"({run_id}, '{metric}', '{item_id}', {'NULL' if value is None else value})",
                )
    # What version 8 read back: NULL as math.nan.
    before = {
        run_id: {m: {i: math.nan if v is None else v for i, v in values.items()}
                 for m, values in metrics.items()}
        for run_id, metrics in stored.items()
    }  # fmt: skip

    with Store.open(path) as store:
        assert "question_metrics" not in table_names(path)
        for run_id, metrics in stored.items():
            after = store.question_metrics(run_id)
            assert after == before[run_id]  # NaN is math.nan itself, as before
            assert store.question_metric_names(run_id) == sorted(metrics)
            for metric, values in metrics.items():
                column = store.metric_column(run_id, metric)
                assert column == (sorted(values), [values[i] for i in sorted(values)])
        page = store.question_metrics(1, item_ids=["a", "é", "nope"])
        assert page["mrr"] == {"a": 2 / 7, "é": 4 / 7} and list(page["faithful"]) == ["a"]
        store.delete_run(2)
        assert store.question_metrics(2) == {} and store.question_metric_names(2) == []
    assert execute(path, "SELECT run_id, metric FROM metric_columns ORDER BY 1, 2") == [
        (1, "faithful"),
        (1, "mrr"),
        (1, "ndcg@10"),
    ]
    shared = "SELECT same_ids_as, item_ids IS NULL FROM metric_columns WHERE metric = 'ndcg@10'"
    assert execute(path, shared) == [("mrr", True)]
