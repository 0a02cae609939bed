"""Store migrations: numbered, named, applied on open (issue 3, item 5; issue 9: PostgreSQL)."""

from __future__ import annotations

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
